package agentledger

import (
	"context"
	"errors"
)

// EffectContext is ctx for performing and recording one effect. An
// operator's cancel (a cause of ErrCancelled) does not cut the effect
// short: the call in flight completes (its own timeout bounds it) and its
// outcome is recorded, so that the ledger says what was sent, and the task
// stops at its next step. Any other end of ctx — a lost lease, a shutdown
// past its grace — ends it at once, as before: the next attempt recovers
// the call by its class. done releases what EffectContext holds.
func EffectContext(ctx context.Context) (ectx context.Context, done func()) {
	if ctx.Done() == nil {
		return ctx, func() {}
	}
	ectx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	if d, ok := ctx.Deadline(); ok {
		var cancelD context.CancelFunc
		ectx, cancelD = context.WithDeadline(ectx, d)
		prev := cancel
		cancel = func(cause error) { prev(cause); cancelD() }
	}
	stop := context.AfterFunc(ctx, func() {
		if cause := context.Cause(ctx); !errors.Is(cause, ErrCancelled) {
			cancel(cause)
		}
	})
	return ectx, func() { stop(); cancel(nil) }
}
