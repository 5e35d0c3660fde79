package ledger_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/agentledger/agentledger/ledger"
)

// BenchmarkDoFirstTime measures a fresh keyed effect with a no-op performer:
// reservation, perform, record — the ledger's cost per effect.
func BenchmarkDoFirstTime(b *testing.B) {
	e := newEnv(b)
	benchEnv(b, e, func(a ledger.Attempt, i int) {
		if _, err := e.Ledger.Do(context.Background(), a, effect(ledger.Keyed, fmt.Sprintf("tool/%d", i), `{}`, noop)); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkDoReplay measures a ledger hit: the effect is served, nothing is
// performed.
func BenchmarkDoReplay(b *testing.B) {
	e := newEnv(b)
	eff := effect(ledger.Keyed, "tool/0", `{"amount":10}`, noop)
	benchEnv(b, e, func(a ledger.Attempt, i int) {
		res, err := e.Ledger.Do(context.Background(), a, eff)
		if err != nil || (i > 0 && !res.Replayed) {
			b.Fatal(err)
		}
	})
}

func noop(context.Context, ledger.Call) (ledger.Result, error) {
	return ledger.Result{Status: 200}, nil
}

func benchEnv(b *testing.B, e *env, op func(a ledger.Attempt, i int)) {
	e.task()
	a, _ := e.claim("bench")
	b.ResetTimer()
	for i := range b.N {
		op(a, i)
	}
}
