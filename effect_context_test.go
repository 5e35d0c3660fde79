package agentledger

import (
	"context"
	"errors"
	"testing"
)

// An operator's cancel leaves an effect's context alone; a lost lease ends
// it with its cause.
func TestEffectContext(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	ectx, done := EffectContext(ctx)
	defer done()
	cancel(ErrCancelled)
	if ectx.Err() != nil {
		t.Fatalf("an operator's cancel ended the effect: %v", context.Cause(ectx))
	}

	ctx, cancel = context.WithCancelCause(context.Background())
	ectx, done2 := EffectContext(ctx)
	defer done2()
	cancel(ErrLeaseLost)
	<-ectx.Done()
	if !errors.Is(context.Cause(ectx), ErrLeaseLost) {
		t.Fatalf("cause %v, want the lease lost", context.Cause(ectx))
	}
}

// The cost EffectContext adds to each effect of a task's context.
func BenchmarkEffectContext(b *testing.B) {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	b.ReportAllocs()
	for b.Loop() {
		_, done := EffectContext(ctx)
		done()
	}
}
