package tui

import (
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/approvals"
	"github.com/agentledger/agentledger/flow"
	"github.com/agentledger/agentledger/operator"
	"github.com/agentledger/agentledger/waits"
)

// tickMsg asks the visible view to reload.
type tickMsg struct{}

// statusExpiredMsg clears status message seq, unless a newer one
// replaced it.
type statusExpiredMsg struct{ seq int }

// pageMsg is a loaded page of tasks; seq names the request.
type pageMsg struct {
	seq  int
	rows []*agentledger.Task
	err  error
}

// countsMsg is the per-state counts of the filter; seq names the request.
type countsMsg struct {
	seq    int
	counts map[agentledger.TaskState]int64
	err    error
}

// detailMsg is a loaded task.
type detailMsg struct {
	id     int64
	detail *Detail
	err    error
}

// workersMsg is the workers' live leases.
type workersMsg struct {
	workers []operator.Worker
	err     error
}

// sharesMsg is the tenants' shares of the claim.
type sharesMsg struct {
	shares []operator.Share
	err    error
}

// limitsMsg is the fleet's limits, the targets booked lately and the
// circuit breakers, with the database's clock when they were read.
type limitsMsg struct {
	limits   []flow.Limit
	usage    []flow.Use
	breakers []flow.BreakerState
	now      time.Time
	err      error
}

// rerunCheckMsg is what a re-run of task would be refused for, if
// anything, before the dialog asks.
type rerunCheckMsg struct {
	task      *agentledger.Task
	unsettled *operator.UnsettledError
	err       error
}

// previewMsg is a replay preview, to confirm.
type previewMsg struct {
	preview *Preview
	err     error
}

// compensationMsg is what a compensation of a task would undo, to
// confirm.
type compensationMsg struct {
	plan *UndoPlan
	err  error
}

// redeliveryMsg is a preview of the redelivery of task id's failed
// notifications, to confirm.
type redeliveryMsg struct {
	id         int64
	redelivery *Redelivery
	err        error
}

// bulkOp is a bulk action over the filter.
type bulkOp int

const (
	bulkRetry bulkOp = iota
	bulkCancel
)

// bulkCountMsg is how many tasks a bulk action would touch, to confirm.
type bulkCountMsg struct {
	op     bulkOp
	filter Filter
	n      int64
	err    error
}

// actionMsg says how an action went.
type actionMsg struct {
	text string
	err  error
}

// approvalCountMsg is how many approval requests are pending.
type approvalCountMsg struct {
	n   int64
	err error
}

// approvalsMsg is the oldest pending approval requests, and how many are
// pending in all.
type approvalsMsg struct {
	after    *approvals.Position // the page's: requests after it, nil from the first
	requests []approvals.Request
	total    int64
	err      error
}

// approvalMsg is one approval request, loaded to show it (decide false)
// or to preview a decision on it (decide true; approve says which).
type approvalMsg struct {
	id      int64
	request approvals.Request
	decide  bool
	approve bool
	err     error
}

// waitCountMsg is how many waits are waiting.
type waitCountMsg struct {
	n   int64
	err error
}

// waitsMsg is the waiting waits due soonest, and how many wait in all.
type waitsMsg struct {
	after *waits.Position // the page's: waits after it, nil from the first
	waits []Wait
	total int64
	err   error
}

// waitAct is what a wait is loaded for: to show it, or to ask before an
// action on it.
type waitAct int

const (
	waitShow waitAct = iota
	waitSend         // its signal
	waitEnd
)

// waitMsg is one wait, loaded for act.
type waitMsg struct {
	id   int64
	wait Wait
	act  waitAct
	err  error
}
