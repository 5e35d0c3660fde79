package ledger_test

import (
	"testing"

	"github.com/agentledger/agentledger/ledger"
)

func TestPlanOf(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		class    ledger.Class
		state    ledger.State
		want     ledger.Plan
		step, op string
	}{
		{ledger.Keyed, ledger.StateCompleted, ledger.PlanServed, "", ""},
		{ledger.Unsafe, ledger.StateCompleted, ledger.PlanServed, "", ""},
		{ledger.Pure, ledger.StateFailed, ledger.PlanServed, "", ""}, // unless it is the last (Reread)
		{ledger.Keyed, ledger.StateFailed, ledger.PlanServed, "", ""},
		{ledger.Keyed, ledger.StatePending, ledger.PlanRun, "", ""},
		{ledger.Pure, ledger.StatePending, ledger.PlanRun, "", ""},
		{ledger.Reconcilable, ledger.StatePending, ledger.PlanLookup, "", ""},
		{ledger.Unsafe, ledger.StatePending, ledger.PlanResolve, "", ""},
		{ledger.Keyed, ledger.StateUnknown, ledger.PlanResolve, "", ""},
		{ledger.Unsafe, ledger.StateUnknown, ledger.PlanResolve, "", ""},
		// Compensations a replay of a parked compensation sends again:
		// a keyed or reconcilable one it reopens, one recorded unbuilt.
		{ledger.Keyed, ledger.StateFailed, ledger.PlanServed, "tool/0", "http_request"},
		{ledger.Keyed, ledger.StateFailed, ledger.PlanRun, "compensate/tool/0", "http_request"},
		{ledger.Reconcilable, ledger.StateFailed, ledger.PlanRun, "compensate/tool/0", "crm.refund"},
		{ledger.Unsafe, ledger.StateFailed, ledger.PlanServed, "compensate/tool/0", "unsafe_http"},
		{ledger.Pure, ledger.StateFailed, ledger.PlanRun, "compensate/tool/0", ledger.UnbuiltPrefix + "http_request"},
	} {
		if got := ledger.PlanOf(ledger.Entry{Class: c.class, State: c.state, StepPath: c.step, Operation: c.op}); got != c.want {
			t.Errorf("%s %s %s %s: %q, want %q", c.class, c.state, c.step, c.op, got, c.want)
		}
	}
}
