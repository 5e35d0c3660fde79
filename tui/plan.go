package tui

import (
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/operator"
)

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
type PlannedEffect = operator.PlannedEffect
