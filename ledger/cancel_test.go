package ledger_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/ledger"
)

// An operator's cancel that arrives while a call is in flight does not cut
// it off unrecorded: the call completes and its outcome is recorded, of
// every class, so the journal says what was sent. A cancel before the
// effect begins sends nothing.
func TestCancelDuringACallRecordsIt(t *testing.T) {
	t.Parallel()
	for _, class := range []ledger.Class{ledger.Keyed, ledger.Unsafe, ledger.Pure, ledger.Reconcilable} {
		t.Run(string(class), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.task()
			a, _ := e.claim("w")
			ctx, cancel := agentledger.AttemptContext(context.Background())
			c := &counter{fn: func(ctx context.Context, _ ledger.Call) (ledger.Result, error) {
				cancel(agentledger.ErrCancelled) // the operator's cancel, seen at a heartbeat
				if err := ctx.Err(); err != nil {
					return ledger.Result{}, err // cut off: sent, and no answer
				}
				return ledger.Result{Status: 201, ExternalRef: "ch_1"}, nil
			}}
			eff := effect(class, "tool/0", `{"x":1}`, c.perform)
			eff.Reconcile = func(context.Context, ledger.Call) (ledger.Result, bool, error) { return ledger.Result{}, false, nil }
			res, err := e.Ledger.Do(ctx, a, eff)
			if err != nil || res.ExternalRef != "ch_1" || c.calls.Load() != 1 {
				t.Fatalf("the call in flight: %+v %v (performed %d), want its answer", res, err, c.calls.Load())
			}
			j, _ := e.Ledger.Journal(context.Background(), a.TaskID, a.Generation)
			if len(j) != 1 || j[0].State != ledger.StateCompleted || j[0].Result.ExternalRef != "ch_1" {
				t.Fatalf("journal %+v, want the call recorded completed", j)
			}

			// The task's next effect is not begun.
			next := effect(class, "tool/1", `{"x":2}`, c.perform)
			next.Reconcile = eff.Reconcile
			if _, err := e.Ledger.Do(ctx, a, next); err == nil || c.calls.Load() != 1 {
				t.Fatalf("an effect after the cancel: %v, performed %d; want it refused unsent", err, c.calls.Load())
			}
		})
	}
}

// A lease lost after an operator's cancel still cuts the call off (the
// next attempt recovers it by its class); a cancel that comes while the
// effect waits to be admitted sends nothing.
func TestCancelThenLeaseLostOrAdmission(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.task()
	a, _ := e.claim("w")
	ctx, stop := agentledger.AttemptContext(context.Background())
	c := &counter{fn: func(ctx context.Context, _ ledger.Call) (ledger.Result, error) {
		stop(agentledger.ErrCancelled)
		stop(agentledger.ErrLeaseLost)
		<-ctx.Done() // ends: the lease is lost
		return ledger.Result{}, ctx.Err()
	}}
	if _, err := e.Ledger.Do(ctx, a, effect(ledger.Keyed, "tool/0", `{"x":1}`, c.perform)); err == nil || c.calls.Load() != 1 {
		t.Fatalf("a call whose lease was lost after a cancel: %v, performed %d", err, c.calls.Load())
	}

	for _, class := range []ledger.Class{ledger.Keyed, ledger.Unsafe} {
		ctx, stop := agentledger.AttemptContext(context.Background())
		sent := &counter{}
		eff := effect(class, "tool/1/"+string(class), `{"x":2}`, sent.perform)
		eff.Admit = func(context.Context) (func(), error) {
			stop(agentledger.ErrCancelled) // arrives while the call waits for its turn
			return func() {}, nil
		}
		if _, err := e.Ledger.Do(ctx, a, eff); !errors.Is(err, agentledger.ErrCancelled) || sent.calls.Load() != 0 {
			t.Fatalf("%s: cancelled while admitted: %v, performed %d; want nothing sent", class, err, sent.calls.Load())
		}
	}
	j, _ := e.Ledger.Journal(context.Background(), a.TaskID, a.Generation)
	for _, en := range j {
		if en.StepPath != "tool/0" {
			t.Errorf("a row for the call never sent: %+v", en)
		}
	}
}
