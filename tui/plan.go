package tui

import "github.com/agentledger/agentledger/ledger"

// Plan is what a replay does with one recorded effect.
type Plan string

// The plans, worded as agentctl replay --dry-run words them.
const (
	PlanServed  Plan = "served from ledger"
	PlanRun     Plan = "will run"
	PlanLookup  Plan = "looked up, then run if absent"
	PlanResolve Plan = "needs resolution"
)

// PlannedEffect is one effect of a replay preview.
type PlannedEffect struct {
	Entry ledger.Entry
	Plan  Plan
}

// PlanOf is the rule of agentctl replay --dry-run: completed and failed
// effects are served from the ledger; an unknown outcome, or an unfinished
// unsafe effect, waits for an operator's resolution; an unfinished
// reconcilable effect is looked up first; any other unfinished effect runs.
// Effects the journal has no row for yet run for the first time.
func PlanOf(e ledger.Entry) Plan {
	switch {
	case e.State == ledger.StateCompleted, e.State == ledger.StateFailed:
		return PlanServed
	case e.State == ledger.StateUnknown, e.Class == ledger.Unsafe:
		return PlanResolve
	case e.Class == ledger.Reconcilable:
		return PlanLookup
	}
	return PlanRun
}

// PlanReplay plans every effect of a journal.
func PlanReplay(journal []ledger.Entry) []PlannedEffect {
	out := make([]PlannedEffect, len(journal))
	for i, e := range journal {
		out[i] = PlannedEffect{Entry: e, Plan: PlanOf(e)}
	}
	return out
}
