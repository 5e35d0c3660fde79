package ledger

import "strings"

// Plan is what a replay (same generation) does with one recorded effect.
// Operators see it before they replay: agentctl replay --dry-run and the
// console's preview both read it from here.
type Plan string

// The plans.
const (
	PlanServed  Plan = "served from ledger"
	PlanRun     Plan = "will run"
	PlanLookup  Plan = "looked up, then run if absent"
	PlanResolve Plan = "needs resolution"
)

// PlanOf is what Do will do with e on a replay: completed and failed
// effects are served from the ledger, but for one that failed unbuilt
// (Ledger.Unbuilt), which is built and sent again, and a keyed or
// reconcilable compensation that failed, which a replay of the parked
// compensation reopens and sends again; an unknown outcome, or an unfinished
// unsafe effect, waits for an operator's resolution; an unfinished
// reconcilable effect is looked up first; any other unfinished effect runs.
// Effects the journal has no row for yet run for the first time.
func PlanOf(e Entry) Plan {
	switch {
	case e.State == StateFailed && e.Unbuilt():
		return PlanRun
	case e.State == StateFailed && strings.HasPrefix(e.StepPath, CompensationPrefix) && (e.Class == Keyed || e.Class == Reconcilable):
		return PlanRun // a replay of a parked compensation reopens it (ReopenCompensationsCTE)
	case e.State == StateCompleted, e.State == StateFailed:
		return PlanServed
	case e.State == StateUnknown, e.Class == Unsafe:
		return PlanResolve
	case e.Class == Reconcilable:
		return PlanLookup
	}
	return PlanRun
}
