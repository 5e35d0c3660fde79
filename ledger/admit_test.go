package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/ledger"
)

// An effect that is not admitted (it waits for a limit) leaves the ledger
// as if never tried, whatever its class — no row, so neither a pending
// reservation that would make an unsafe effect unknown nor a recorded
// failure — and once admitted it is performed once; a replay served from
// the ledger is never admitted again.
func TestAdmitRefusalRecordsNothing(t *testing.T) {
	t.Parallel()
	for _, class := range []ledger.Class{ledger.Pure, ledger.Keyed, ledger.Reconcilable, ledger.Unsafe} {
		t.Run(string(class), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			e := newEnv(t)
			e.task()
			a, _ := e.claim("w")
			c := &counter{}
			var asked, released atomic.Int64
			open := false
			eff := effect(class, "tool/0", `{"x":1}`, c.perform)
			eff.Reconcile = func(context.Context, ledger.Call) (ledger.Result, bool, error) { return ledger.Result{}, false, nil }
			eff.Admit = func(context.Context) (func(), error) {
				asked.Add(1)
				if !open {
					return nil, fmt.Errorf("limit: %w", agentledger.Deferred(time.Now().Add(time.Second), "http:https://x.example:443", "full"))
				}
				return func() { released.Add(1) }, nil
			}
			_, err := e.Ledger.Do(ctx, a, eff)
			var waits *agentledger.DeferredError
			if !errors.As(err, &waits) || c.calls.Load() != 0 {
				t.Fatalf("not admitted: err %v, performed %d", err, c.calls.Load())
			}
			if j, _ := e.Ledger.Journal(ctx, a.TaskID, a.Generation); len(j) != 0 {
				t.Fatalf("a refused effect left rows: %+v", j)
			}
			open = true
			first, err := e.Ledger.Do(ctx, a, eff)
			if err != nil || first.Replayed || c.calls.Load() != 1 || asked.Load() != 2 || released.Load() != 1 {
				t.Fatalf("admitted: %+v %v, performed %d, asked %d, released %d", first, err, c.calls.Load(), asked.Load(), released.Load())
			}
			again, err := e.Ledger.Do(ctx, a, eff)
			if err != nil || !again.Replayed || c.calls.Load() != 1 || asked.Load() != 2 {
				t.Fatalf("replay: %+v %v, performed %d, asked %d (a replay must not be admitted)", again, err, c.calls.Load(), asked.Load())
			}
		})
	}
}

func TestLocalEffectIsNotAdmitted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.task()
	a, _ := e.claim("w")
	eff := ledger.Effect{Operation: "test.local", StepPath: "x", Class: ledger.Local,
		PerformLocal: func(context.Context, ledger.Call, ledger.DB) (ledger.Result, error) { return ledger.Result{}, nil },
		Admit:        func(context.Context) (func(), error) { return nil, nil }}
	if _, err := e.Ledger.Do(context.Background(), a, eff); !errors.Is(err, agentledger.ErrInvalid) {
		t.Fatalf("local effect with Admit: %v, want ErrInvalid", err)
	}
}
