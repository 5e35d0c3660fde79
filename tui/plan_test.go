package tui

import (
	"testing"

	"github.com/agentledger/agentledger/ledger"
)

func TestPlanOfFollowsReplayDryRun(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		class ledger.Class
		state ledger.State
		want  Plan
	}{
		{ledger.Keyed, ledger.StateCompleted, PlanServed},
		{ledger.Unsafe, ledger.StateCompleted, PlanServed},
		{ledger.Pure, ledger.StateFailed, PlanServed},
		{ledger.Keyed, ledger.StatePending, PlanRun},
		{ledger.Pure, ledger.StatePending, PlanRun},
		{ledger.Reconcilable, ledger.StatePending, PlanLookup},
		{ledger.Unsafe, ledger.StatePending, PlanResolve},
		{ledger.Keyed, ledger.StateUnknown, PlanResolve},
		{ledger.Unsafe, ledger.StateUnknown, PlanResolve},
	} {
		if got := PlanOf(ledger.Entry{Class: c.class, State: c.state}); got != c.want {
			t.Errorf("%s %s: %q, want %q", c.class, c.state, got, c.want)
		}
	}
}
