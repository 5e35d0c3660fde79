package tools_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentledger/agentledger/approvals"
	"github.com/agentledger/agentledger/flow"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/tools"
)

// admittingDoer is nopDoer that asks an effect's admission and releases it,
// as the ledger does before performing.
type admittingDoer struct{}

func (admittingDoer) Do(ctx context.Context, _ ledger.Attempt, e ledger.Effect) (ledger.Result, error) {
	if e.Admit != nil {
		release, err := e.Admit(ctx)
		if err != nil {
			return ledger.Result{}, err
		}
		if release != nil {
			defer release()
		}
	}
	return e.Perform(ctx, ledger.Call{})
}

// targetedNop is nopTool naming a flow target, as the HTTP tools do.
type targetedNop struct{ nopTool }

func (t targetedNop) Effect(c tools.Call) (ledger.Effect, error) {
	e, err := t.nopTool.Effect(c)
	e.Target, e.Hold = "http:https://billing.example", 30*time.Second
	return e, err
}

// BenchmarkPathStages measures what each stage of the effect path costs an
// effect when it has nothing to do, one added at a time over a ledger that
// does nothing: the grant read from the daemon's cache (a tenant's grant
// naming the tool), the fleet's limiter asked for a target that has no
// limit (its limits cached, as between refreshes), an embedder's
// interceptor that passes the effect on. Tracing is a stage of every path
// (the global tracer, a no-op unless agentd's tracing is on). An effect
// through the ledger and a downstream costs ~200 µs of Go CPU
// (BENCHMARKS.md), against which these are read.
func BenchmarkPathStages(b *testing.B) {
	db := testdb.New(b)
	ctx, task := context.Background(), benchTask()
	store := grants.NewStore(db)
	if err := store.Put(ctx, task.Tenant, &grants.Grant{AllKinds: true, Tools: []string{"nop"}}); err != nil {
		b.Fatal(err)
	}
	cache := grants.NewCache(store)
	limiter := flow.NewLimiter(db, nil)
	pass := func(ctx context.Context, o *tools.Outgoing, next tools.Next) (ledger.Result, error) {
		return next(ctx, o)
	}
	args := json.RawMessage(`{}`)
	for _, c := range []struct {
		name string
		path *tools.Path
	}{
		{"bare", &tools.Path{Ledger: admittingDoer{}}},
		{"grant", &tools.Path{Ledger: admittingDoer{}, Grants: cache}},
		{"grant+flow", &tools.Path{Ledger: admittingDoer{}, Grants: cache, Gate: limiter}},
		{"grant+flow+interceptor", &tools.Path{Ledger: admittingDoer{}, Grants: cache, Gate: limiter,
			Interceptors: []tools.Interceptor{pass}}},
		// The approval gate, first as the daemon wires it, with a policy
		// that gates nothing this effect is (no gate on the call, none on
		// its tool, not unsafe): a gate never hit.
		{"grant+flow+approval gate+interceptor", &tools.Path{Ledger: admittingDoer{}, Grants: cache, Gate: limiter,
			Interceptors: []tools.Interceptor{(&approvals.Gate{Store: approvals.NewStore(db), Policy: func(o *tools.Outgoing) *tools.Approval {
				if a := tools.ApprovalOf(o); a != nil {
					return a
				}
				if o.Effect.Class == ledger.Unsafe {
					return &tools.Approval{}
				}
				return nil
			}}).Intercept, pass}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			if _, err := c.path.Perform(ctx, &tools.Outgoing{Tool: targetedNop{}, Call: tools.Call{Task: task, StepPath: "tool/0", Args: args}}); err != nil {
				b.Fatal(err) // the first call fills the caches
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.path.Perform(ctx, &tools.Outgoing{Tool: targetedNop{},
					Call: tools.Call{Task: task, StepPath: "tool/0", Args: args}}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
