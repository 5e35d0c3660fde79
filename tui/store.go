package tui

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/approvals"
	"github.com/agentledger/agentledger/flow"
	"github.com/agentledger/agentledger/operator"
	"github.com/agentledger/agentledger/waits"
)

// Filter selects the tasks the console lists. Zero fields match everything.
type Filter struct {
	State  agentledger.TaskState
	Queue  string
	Kind   string
	Tenant string
}

// String is the filter as key=value words; empty when it matches every
// task.
func (f Filter) String() string {
	var parts []string
	for _, kv := range [][2]string{{"state", string(f.State)}, {"queue", f.Queue}, {"kind", f.Kind}, {"tenant", f.Tenant}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+"="+kv[1])
		}
	}
	return strings.Join(parts, " ")
}

// Detail is one task with everything the task view shows.
type Detail struct {
	operator.Detail
	// Earlier are the journals of the task's earlier generations that
	// notification events belong to, by generation: the messages posted
	// for those events are recorded there (Journal is the current
	// generation's).
	Earlier map[int32][]operator.Effect
	// Approvals are the approval requests of the task's current
	// generation, the pending one first.
	Approvals []approvals.Request
	// Waits are the waits of the task's current generation, the
	// waiting one first, then the newest.
	Waits []Wait
}

// Wait is a task's wait for a signal, a timer or its children; for a
// children wait, with how many of the children it waits for ended.
type Wait struct {
	waits.Wait
	Children, Ended int
}

// journal is the journal of generation g, as far as the detail holds it.
func (d *Detail) journal(g int32) []operator.Effect {
	if g == d.Task.Generation {
		return d.Journal
	}
	return d.Earlier[g]
}

// Preview is what a replay of a task would do, effect by effect.
type Preview = operator.Preview

// UndoPlan is what a compensation of a task would undo, newest first.
type UndoPlan = operator.UndoPlan

// Redelivery is what delivering a task's failed notifications again
// sends, or would send: each notification with its plan.
type Redelivery = operator.Redelivery

// Resolution settles an effect of unknown outcome: Done (it happened) or
// not (allow one more performance), with a note saying why.
type Resolution = operator.Resolution

// Store is everything the console reads and does. Task ids are global: the
// console is an operator's tool and sees every tenant. Errors wrap the
// agentledger sentinels (ErrNotFound, ErrConflict, ErrInvalid).
type Store interface {
	// List returns at most limit tasks of f with an id below before (0: the
	// newest), newest first.
	List(ctx context.Context, f Filter, before int64, limit int) ([]*agentledger.Task, error)
	// Count returns how many tasks of f are in each state.
	Count(ctx context.Context, f Filter) (map[agentledger.TaskState]int64, error)
	// Get returns task id with its attempts, journal and notifications.
	Get(ctx context.Context, id int64) (*Detail, error)
	// ReplayPreview says, for each effect of the task's journal, whether a
	// replay serves it from the ledger or runs it.
	ReplayPreview(ctx context.Context, id int64) (*Preview, error)
	// RedeliveryPreview says which failed notifications of task id (of
	// every generation) Redeliver would send again, and how; it changes
	// nothing.
	RedeliveryPreview(ctx context.Context, id int64) (*Redelivery, error)
	// Redeliver delivers the failed notifications of task id again, under
	// the same ledger keys as before.
	Redeliver(ctx context.Context, id int64) (*Redelivery, error)
	// Replay runs the task again in the same generation.
	Replay(ctx context.Context, id int64) (*agentledger.Task, error)
	// Rerun runs the task again as a new intent: every effect runs again.
	Rerun(ctx context.Context, id int64) (*agentledger.Task, error)
	// Unsettled is what a re-run of task id would be refused for, its
	// effects of unknown outcome; nil when none.
	Unsettled(ctx context.Context, id int64) (*operator.UnsettledError, error)
	// Cancel cancels the task (a running one stops before its next call).
	Cancel(ctx context.Context, id int64) (*agentledger.Task, error)
	// Retry runs a dead task again from attempt 1 in the same generation.
	Retry(ctx context.Context, id int64) (*agentledger.Task, error)
	// CompensationPreview says which completed effects a compensation of
	// task id would undo, newest first; it changes nothing.
	CompensationPreview(ctx context.Context, id int64) (*UndoPlan, error)
	// Compensate starts the task's compensation phase: its completed
	// effects are undone, newest first.
	Compensate(ctx context.Context, id int64) (*agentledger.Task, error)
	// Resolve settles the unknown effect at step of task id and, when the
	// task needs attention, replays it; it says whether it did.
	Resolve(ctx context.Context, id int64, step string, r Resolution) (operator.ResolveOutcome, error)
	// RetryAll retries every dead task of f.
	RetryAll(ctx context.Context, f Filter) (operator.BulkResult, error)
	// CancelAll cancels every unfinished task of f.
	CancelAll(ctx context.Context, f Filter) (operator.BulkResult, error)
	// Workers lists the workers holding leases now.
	Workers(ctx context.Context) ([]operator.Worker, error)
	// Shares lists the tenants' weights and caps with their running
	// tasks, by name.
	Shares(ctx context.Context) ([]operator.Share, error)
	// Limits lists the fleet's limits by target.
	Limits(ctx context.Context) ([]flow.Limit, error)
	// Usage lists the concrete targets booked lately, with the limit in
	// force for each and how long until its next call passes.
	Usage(ctx context.Context) ([]flow.Use, error)
	// Breakers lists the stored circuit breakers by target, with the
	// database's clock when read.
	Breakers(ctx context.Context) ([]flow.BreakerState, time.Time, error)
	// PendingApprovals returns the oldest pending approval requests of
	// every task, at most limit of those after after (nil: from the
	// first), and how many are pending in all.
	PendingApprovals(ctx context.Context, after *approvals.Position, limit int) ([]approvals.Request, int64, error)
	// Approval returns approval request id, whatever its state.
	Approval(ctx context.Context, id int64) (approvals.Request, error)
	// Decide approves or denies request id for the operator at the
	// console. won is false when a decision came first (or the request
	// timed out or was withdrawn): r is then as that left it.
	Decide(ctx context.Context, id int64, approve bool, reason string) (r approvals.Request, won bool, err error)
	// Waiting returns the waiting waits of every task, the soonest
	// deadline first, at most limit of those after after (nil: from the
	// first), and how many wait in all.
	Waiting(ctx context.Context, after *waits.Position, limit int) ([]Wait, int64, error)
	// Wait returns wait id, whatever its state.
	Wait(ctx context.Context, id int64) (Wait, error)
	// SendSignal sends the signal wait id waits for, with payload, as
	// the operator at the console: the same for that wait whenever it is
	// sent again (a duplicate; with another payload, an error).
	SendSignal(ctx context.Context, id int64, payload json.RawMessage) (waits.Sent, error)
	// EndWait ends wait id for the operator at the console with reason:
	// the waiting call fails saying so. ended is false when it had ended
	// already: w is then as that left it.
	EndWait(ctx context.Context, id int64, reason string) (w waits.Wait, ended bool, err error)
}
