package client

import (
	"context"
	"errors"
	"time"

	"github.com/agentledger/agentledger"
)

// Reader reads a task by id: a Client does.
type Reader interface {
	Task(ctx context.Context, id int64) (*agentledger.Task, error)
}

// Wait reads task id through c until it has ended — succeeded, dead,
// cancelled or compensated — or needs an operator (needs_attention), and
// returns it as it then stands: whether it succeeded is its State. It
// reads every 100 ms at first, then less often, up to every 2 s. A read
// that fails for a reason that may pass (the server unavailable, a
// connection reset while a daemon restarts) is read again; one that
// cannot (the task not found, a token refused) ends the wait. When ctx
// ends, Wait returns its error with the task as last read (nil if never).
func Wait(ctx context.Context, c Reader, id int64) (*agentledger.Task, error) {
	every := 100 * time.Millisecond
	var last *agentledger.Task
	for {
		t, err := c.Task(ctx, id)
		switch {
		case ctx.Err() != nil:
			return last, ctx.Err()
		case err != nil && final(err):
			return last, err
		case err == nil:
			last = t
			if t.State.Finished() || t.State == agentledger.StateNeedsAttention {
				return t, nil
			}
		}
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-time.After(every):
		}
		every = min(2*every, 2*time.Second)
	}
}

// final says a read failed for a reason reading again cannot mend.
func final(err error) bool {
	for _, e := range []error{agentledger.ErrNotFound, agentledger.ErrInvalid, agentledger.ErrForbidden} {
		if errors.Is(err, e) {
			return true
		}
	}
	code := agentledger.KindOf(err).Code
	return code == agentledger.CodeUnauthorized || code == agentledger.CodeForbidden
}
