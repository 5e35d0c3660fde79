package client

import (
	"context"
	"time"

	"github.com/agentledger/agentledger"
)

// Wait reads task id through c until it has ended — succeeded, dead,
// cancelled or compensated — or needs an operator (needs_attention), and
// returns it as it then stands: whether it succeeded is its State. It
// reads every 100 ms at first, then less often, up to every 2 s; ctx
// bounds the wait (its error, with the task as last read).
func Wait(ctx context.Context, c Client, id int64) (*agentledger.Task, error) {
	every := 100 * time.Millisecond
	for {
		t, err := c.Task(ctx, id)
		if err != nil {
			return nil, err
		}
		if t.State.Finished() || t.State == agentledger.StateNeedsAttention {
			return t, nil
		}
		select {
		case <-ctx.Done():
			return t, ctx.Err()
		case <-time.After(every):
		}
		every = min(2*every, 2*time.Second)
	}
}
