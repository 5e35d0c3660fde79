package ledger_test

import (
	"testing"

	"github.com/agentledger/agentledger/ledger"
)

func TestPlanOf(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		class ledger.Class
		state ledger.State
		want  ledger.Plan
	}{
		{ledger.Keyed, ledger.StateCompleted, ledger.PlanServed},
		{ledger.Unsafe, ledger.StateCompleted, ledger.PlanServed},
		{ledger.Pure, ledger.StateFailed, ledger.PlanServed},
		{ledger.Keyed, ledger.StatePending, ledger.PlanRun},
		{ledger.Pure, ledger.StatePending, ledger.PlanRun},
		{ledger.Reconcilable, ledger.StatePending, ledger.PlanLookup},
		{ledger.Unsafe, ledger.StatePending, ledger.PlanResolve},
		{ledger.Keyed, ledger.StateUnknown, ledger.PlanResolve},
		{ledger.Unsafe, ledger.StateUnknown, ledger.PlanResolve},
	} {
		if got := ledger.PlanOf(ledger.Entry{Class: c.class, State: c.state}); got != c.want {
			t.Errorf("%s %s: %q, want %q", c.class, c.state, got, c.want)
		}
	}
}
