package worker

import (
	"context"
	"encoding/json"

	"github.com/agentledger/agentledger"
)

// Handler works one task of a kind. It returns the task's result (any JSON,
// or nil) or an error: agentledger.Permanent(err) dead-letters the task,
// agentledger.RetryAfter(err, d) retries no sooner than d, any other error
// retries with backoff. A handler must return promptly once ctx is done.
type Handler interface {
	Work(ctx context.Context, task *agentledger.Task) (json.RawMessage, error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, task *agentledger.Task) (json.RawMessage, error)

// Work calls f.
func (f HandlerFunc) Work(ctx context.Context, task *agentledger.Task) (json.RawMessage, error) {
	return f(ctx, task)
}
