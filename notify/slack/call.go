package slack

import (
	"context"
	"errors"
	"strings"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/notify"
)

// maxRateLimited bounds the 429s waited out inside one call.
const maxRateLimited = 5

// op describes one Web API call for pacing, errors and logs.
type op struct {
	method  string
	channel string // as addressed: a name or an ID
	key     string // the effect key, for logs
	paced   bool   // posts and updates are paced
}

// call runs fn, the call o, until it succeeds or fails: paced calls wait
// for their slot first, and a 429 is waited out and tried again (not a
// failure) while its Retry-After is at most maxRetryAfter, up to
// maxRateLimited times; beyond that the error is agentledger.RetryAfter.
func (s *Sink) call(ctx context.Context, o op, fn func(context.Context) error) error {
	for tries := 1; ; tries++ {
		if o.paced {
			if err := s.paceCall(ctx, o.channel); err != nil {
				return s.fail(o, err)
			}
		}
		err := fn(ctx)
		if err == nil {
			return nil
		}
		d, limited := rateLimited(err)
		if !limited {
			return s.fail(o, err)
		}
		if d > s.maxRetryAfter || tries >= maxRateLimited {
			return s.fail(o, agentledger.RetryAfter(err, d))
		}
		s.log.Info("slack rate limited: waiting", "method", o.method, "channel", o.channel, "retry_after", d)
		if err := sleep(ctx, d); err != nil {
			return s.fail(o, err)
		}
	}
}

// fail classifies and logs the error that ends call o.
func (s *Sink) fail(o op, err error) error {
	var ra *agentledger.RetryAfterError
	if errors.As(err, &ra) {
		err = agentledger.RetryAfter(classify(o.method, o.channel, ra.Err, s.redact), ra.After)
	} else {
		err = classify(o.method, o.channel, err, s.redact)
	}
	var perm *agentledger.PermanentError
	attrs := []any{"method", o.method, "channel", o.channel, "permanent", errors.As(err, &perm), "err", err.Error()}
	if o.key != "" {
		attrs = append(attrs, "key", notify.ShortKey(o.key))
	}
	s.log.Warn("slack call failed", attrs...)
	return err
}

// paceCall waits until a post or update to channel may go: for this
// process's pacer first (cheap, and it keeps a busy daemon from asking the
// database for every call), then, with Config.Fleet, for the fleet's.
func (s *Sink) paceCall(ctx context.Context, channel string) error {
	if s.fleet != nil {
		s.resolve(ctx, channel)
	}
	key := func() string { return s.paceKey(channel) }
	if err := s.pace.wait(ctx, key); err != nil {
		return err
	}
	if s.fleet == nil {
		return nil
	}
	return s.fleetWait(ctx, key())
}

// resolve learns the ID of channel, addressed by name, so that the
// fleet paces the channel under one target in every daemon whether a
// notification names it or its ID. When that fails the name stands in:
// the post itself will say what is wrong with the channel.
func (s *Sink) resolve(ctx context.Context, channel string) {
	if _, ok := s.knownID(channel); ok {
		return
	}
	if _, err := s.channelID(ctx, channel); err != nil {
		s.log.Debug("slack channel not resolved: paced by its name", "channel", channel, "err", err.Error())
	}
}

// paceKey names the channel for pacing: its ID when known, so that a
// name and its ID share one pace.
func (s *Sink) paceKey(channel string) string {
	if id, ok := s.knownID(channel); ok {
		return id
	}
	return strings.TrimPrefix(channel, "#")
}

// remember records that channel (as addressed) has the ID id; pacing by
// its name moves to the ID.
func (s *Sink) remember(channel, id string) {
	if id == "" || isChannelID(channel) {
		return
	}
	name := strings.TrimPrefix(channel, "#")
	s.mu.Lock()
	known := s.ids[name] == id
	s.ids[name] = id
	s.mu.Unlock()
	if !known {
		s.pace.rekey(name, id)
	}
}

// knownID returns the ID of channel if it is one or was learnt.
func (s *Sink) knownID(channel string) (string, bool) {
	if isChannelID(channel) {
		return channel, true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.ids[strings.TrimPrefix(channel, "#")]
	return id, ok
}

// isChannelID tells a conversation ID ("C0123ABCD", "G…", "D…") from a
// name: names are lower case.
func isChannelID(s string) bool {
	if len(s) < 9 || !strings.ContainsRune("CGD", rune(s[0])) {
		return false
	}
	for _, r := range s {
		if (r < 'A' || r > 'Z') && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}
