package slack

import (
	"context"
	"time"
)

// FleetPacer books calls against limits the whole fleet shares (package
// flow's Limiter keeps them in PostgreSQL). Take books one call on target
// and answers 0 if the limit allows it now, or books nothing and answers
// how long to wait before asking again; a target without a limit answers
// 0. An error means the limit could not be read: the caller waits.
type FleetPacer interface {
	Take(ctx context.Context, target string) (time.Duration, error)
}

// Fleet-wide targets of a Sink's posts and updates.
const (
	// ChannelTargetPrefix, followed by the channel's ID, is the target of
	// the posts and updates to one channel.
	ChannelTargetPrefix = "slack-channel:"
	// WorkspaceTarget is the target of every post and update.
	WorkspaceTarget = "slack-workspace"
)

// fleetRetry is how long a call waits when the fleet's limits cannot be
// read before asking again: it never goes unpaced.
const fleetRetry = time.Second

// fleetWait returns when the fleet allows a call to channel (an ID, or a
// name that could not be resolved), booked on the channel's target and on
// the workspace's, or with ctx's error.
//
// The channel is booked first and the workspace second, and the call goes
// right after both: the channel's spacing is the one Slack enforces
// strictly, so nothing may stand between its booking and the call but the
// workspace's answer. When the workspace is full the channel's booking is
// given up, not held (a booking cannot be returned): the call waits for
// the workspace and starts over from the channel. That costs the channel
// one slot each time the workspace is the bottleneck — then the channel's
// capacity is not what runs short — while holding the workspace's booking
// through a channel's wait, or the channel's through the workspace's,
// would send the call late, closer to the next booking than the limit
// allows, and keep the other target's slot from every daemon meanwhile.
func (s *Sink) fleetWait(ctx context.Context, channel string) error {
	target := ChannelTargetPrefix + channel
	for {
		d, err := s.fleetTake(ctx, target)
		if err != nil {
			return err
		}
		if d > 0 {
			if err := sleep(ctx, d); err != nil {
				return err
			}
			continue
		}
		if d, err = s.fleetTake(ctx, WorkspaceTarget); err != nil || d == 0 {
			return err
		}
		s.log.Debug("slack workspace limit: waiting", "channel", channel, "wait", d)
		if err := sleep(ctx, d); err != nil {
			return err
		}
	}
}

// fleetTake asks the fleet for a call on target until it answers: an
// unreadable limit is logged and asked again after fleetRetry (fail
// closed). Only ctx's error ends it early.
func (s *Sink) fleetTake(ctx context.Context, target string) (time.Duration, error) {
	for {
		d, err := s.fleet.Take(ctx, target)
		if err == nil {
			return d, nil
		}
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		s.log.Warn("slack: the fleet's limit cannot be read: waiting, not posting unpaced",
			"target", target, "retry_in", fleetRetry, "err", s.redact(err.Error()))
		if err := sleep(ctx, fleetRetry); err != nil {
			return 0, err
		}
	}
}
