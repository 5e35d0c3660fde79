package agentledger

import (
	"context"
	"errors"
	"testing"
)

type valueKey struct{}

// An operator's cancel ends the task's context, not a call's in flight,
// which keeps the task's values; a lost lease after it still ends the
// call, as does one with no cancel before it.
func TestEffectContext(t *testing.T) {
	ctx, stop := AttemptContext(context.Background())
	ctx = context.WithValue(ctx, valueKey{}, "span")
	call := EffectContext(ctx)
	if call.Value(valueKey{}) != "span" {
		t.Fatal("the call lost the task's values")
	}
	stop(ErrCancelled)
	if !errors.Is(context.Cause(ctx), ErrCancelled) || call.Err() != nil {
		t.Fatalf("after an operator's cancel: task %v, call %v; want the task ended, the call not", context.Cause(ctx), call.Err())
	}
	if err := CancelRequested(call); !errors.Is(err, ErrCancelled) {
		t.Fatalf("CancelRequested = %v", err)
	}
	if UntilCancelled(call).Err() == nil {
		t.Fatal("a wait before sending did not end at the cancel")
	}
	if EffectContext(ctx).Err() != nil {
		t.Fatal("a call begun after the cancel runs on an ended context")
	}
	stop(ErrLeaseLost) // then the lease is lost: the call must stop
	if call.Err() == nil {
		t.Fatal("a lost lease after an operator's cancel left the call running")
	}

	ctx, stop = AttemptContext(context.Background())
	call = EffectContext(ctx)
	stop(ErrLeaseLost)
	if call.Err() == nil || CancelRequested(ctx) != nil || !errors.Is(context.Cause(ctx), ErrLeaseLost) {
		t.Fatalf("a lost lease: call %v, cancel requested %v, task %v", call.Err(), CancelRequested(ctx), context.Cause(ctx))
	}

	// Outside an attempt, nothing changes.
	plain, cancel := context.WithCancel(context.Background())
	if EffectContext(plain) != plain || UntilCancelled(plain) != plain || CancelRequested(plain) != nil {
		t.Fatal("a context of no attempt was changed")
	}
	cancel()
}

// What the attempt's contexts cost an effect.
func BenchmarkEffectContext(b *testing.B) {
	ctx, stop := AttemptContext(context.Background())
	defer stop(nil)
	b.ReportAllocs()
	for b.Loop() {
		if CancelRequested(ctx) == nil {
			_ = EffectContext(ctx)
		}
	}
}
