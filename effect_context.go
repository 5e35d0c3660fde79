package agentledger

import (
	"context"
	"errors"
)

// An attempt runs on two contexts (AttemptContext): the hard one ends when
// it must stop at once — its lease lost or about to run out, the daemon
// shutting down past its grace — and the task's own, a child of it, ends
// with those and with an operator's cancel (ErrCancelled). A call in
// flight through the ledger runs on the hard one (EffectContext): an
// operator's cancel lets it finish and be recorded, so that the journal
// says what was sent; the task stops before its next call.
type attemptContexts struct{ hard, task context.Context }

type attemptKey struct{}

// AttemptContext returns a running attempt's context, a child of parent,
// and the function that stops it with a cause: ErrCancelled (an
// operator's cancel) ends the task's context only, any other cause both.
func AttemptContext(parent context.Context) (ctx context.Context, stop context.CancelCauseFunc) {
	hard, stopHard := context.WithCancelCause(parent)
	task, stopTask := context.WithCancelCause(hard)
	ctx = context.WithValue(task, attemptKey{}, &attemptContexts{hard: hard, task: task})
	return ctx, func(cause error) {
		if errors.Is(cause, ErrCancelled) {
			stopTask(cause)
			return
		}
		stopHard(cause)
		stopTask(cause)
	}
}

// EffectContext is ctx for performing one call and recording its outcome:
// within an attempt (AttemptContext), it ends only when the attempt must
// stop at once, not at an operator's cancel; it carries ctx's values.
// Elsewhere it is ctx.
func EffectContext(ctx context.Context) context.Context {
	a, ok := ctx.Value(attemptKey{}).(*attemptContexts)
	if !ok {
		return ctx
	}
	return valuesOf{Context: a.hard, values: ctx}
}

// UntilCancelled is ctx ending as the task's own context does, an
// operator's cancel included, whatever EffectContext made of it: for a
// wait inside a call that has not sent anything yet (an admission, a
// backoff before the next request).
func UntilCancelled(ctx context.Context) context.Context {
	a, ok := ctx.Value(attemptKey{}).(*attemptContexts)
	if !ok {
		return ctx
	}
	return valuesOf{Context: a.task, values: ctx}
}

// CancelRequested is the operator's cancel of the attempt ctx belongs to
// (ErrCancelled) once it came, else nil.
func CancelRequested(ctx context.Context) error {
	a, ok := ctx.Value(attemptKey{}).(*attemptContexts)
	if !ok || a.task.Err() == nil {
		return nil
	}
	if cause := context.Cause(a.task); errors.Is(cause, ErrCancelled) {
		return cause
	}
	return nil
}

// valuesOf ends as Context does and holds the values of values. (Its
// context.Cause is values', which may name an operator's cancel while it
// runs on: test Err first, as the standard library's users do.)
type valuesOf struct {
	context.Context
	values context.Context
}

func (v valuesOf) Value(key any) any { return v.values.Value(key) }
