package tui

import "github.com/agentledger/agentledger/ledger"

// Plan is what a replay does with one recorded effect (ledger.PlanOf).
type Plan = ledger.Plan

// The plans.
const (
	PlanServed  = ledger.PlanServed
	PlanRun     = ledger.PlanRun
	PlanLookup  = ledger.PlanLookup
	PlanResolve = ledger.PlanResolve
)

// PlannedEffect is one effect of a replay preview.
type PlannedEffect struct {
	Entry ledger.Entry
	Plan  Plan
}

// PlanOf is ledger.PlanOf, the rule agentctl replay --dry-run prints.
func PlanOf(e ledger.Entry) Plan { return ledger.PlanOf(e) }

// PlanReplay plans every effect of a journal.
func PlanReplay(journal []ledger.Entry) []PlannedEffect {
	out := make([]PlannedEffect, len(journal))
	for i, e := range journal {
		out[i] = PlannedEffect{Entry: e, Plan: PlanOf(e)}
	}
	return out
}
