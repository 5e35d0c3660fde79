package tools

import (
	"context"
	"fmt"
	"time"

	"github.com/agentledger/agentledger"
)

// Limiter books calls on targets against the fleet-wide limits
// (flow.Limiter): Take books one call if target's limit allows it now
// and returns 0, or books nothing and returns how long until it would.
type Limiter interface {
	Take(ctx context.Context, target string) (time.Duration, error)
}

// Waits up to WaitInPlace for a limit happen in the attempt: cheaper than
// handing the task back to the queue and claiming it again. A longer wait
// defers the task (agentledger.DeferredError) so that it holds no worker
// slot meanwhile.
const WaitInPlace = time.Second

// unavailableWait is how long a task waits when the limit cannot be
// checked: the call does not run unlimited while the database is away.
const unavailableWait = 5 * time.Second

// admit books the call on target with l, waiting in place for short waits.
// The reason of a deferral names the target, never a header or body.
func admit(ctx context.Context, l Limiter, target string) error {
	var waited time.Duration
	for {
		wait, err := l.Take(ctx, target)
		switch {
		case err != nil && ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			return agentledger.Deferred(time.Now().Add(unavailableWait), target,
				fmt.Sprintf("%s: its limit cannot be checked (database unavailable); calls wait", target))
		case wait == 0:
			return nil
		case waited+wait > WaitInPlace:
			return agentledger.Deferred(time.Now().Add(wait), target,
				fmt.Sprintf("%s: rate limit, next slot in %s", target, wait.Round(100*time.Millisecond)))
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-timer.C:
		}
		waited += wait
	}
}
