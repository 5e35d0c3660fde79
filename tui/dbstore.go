package tui

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/user"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/approvals"
	"github.com/agentledger/agentledger/flow"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/operator"
	"github.com/agentledger/agentledger/waits"
)

// DBStore is the Store over the database: the operator service, the
// ledger for the journals of a task's earlier generations, the flow
// limits, the approval requests, and the waits.
type DBStore struct {
	Operator  *operator.Service
	Ledger    *ledger.Ledger
	Flow      *flow.Store
	Approvals *approvals.Store
	Waits     *waits.Store
	// User is who decides approval requests, sends signals, ends waits
	// and cancels from this console: the operating system's user name.
	User string

	db operator.DB
}

// NewDBStore returns the store over db.
func NewDBStore(db operator.DB) *DBStore {
	return &DBStore{Operator: operator.New(db), Ledger: ledger.New(db), Flow: flow.NewStore(db),
		Approvals: approvals.NewStore(db), Waits: waits.NewStore(db), User: osUser(), db: db}
}

// osUser is the name of the user running the console, as a decision
// records who made it; "" when the system cannot say (Decide refuses).
func osUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return os.Getenv("USER")
}

var _ Store = (*DBStore)(nil)

// params turns a filter into list parameters.
func (f Filter) params() operator.ListParams {
	p := operator.ListParams{Tenant: f.Tenant, Queue: f.Queue, Kind: f.Kind}
	if f.State != "" {
		p.States = []agentledger.TaskState{f.State}
	}
	return p
}

// List implements Store.
func (s *DBStore) List(ctx context.Context, f Filter, before int64, limit int) ([]*agentledger.Task, error) {
	p := f.params()
	p.Before, p.Limit = before, limit
	return s.Operator.List(ctx, p)
}

// Count implements Store.
func (s *DBStore) Count(ctx context.Context, f Filter) (map[agentledger.TaskState]int64, error) {
	return s.Operator.Count(ctx, f.params())
}

// Get implements Store. Besides what agentctl show reads, it reads the
// journal of each earlier generation that a notification event belongs
// to (one query per generation), where the event's message is recorded.
func (s *DBStore) Get(ctx context.Context, id int64) (*Detail, error) {
	d, err := s.Operator.Show(ctx, "", id)
	if err != nil {
		return nil, err
	}
	out := &Detail{Detail: *d, Earlier: map[int32][]operator.Effect{}}
	for _, n := range d.Notifications {
		if _, ok := out.Earlier[n.Generation]; ok || n.Generation == d.Task.Generation {
			continue
		}
		j, err := s.Ledger.Journal(ctx, id, n.Generation)
		if err != nil {
			return nil, err
		}
		effects := make([]operator.Effect, len(j))
		for i, e := range j {
			effects[i] = operator.EffectOf(e)
		}
		out.Earlier[n.Generation] = effects
	}
	for _, r := range d.Approvals { // every generation's, the pending one first
		if r.Generation == d.Task.Generation {
			out.Approvals = append(out.Approvals, r)
		}
	}
	if out.Waits, err = s.taskWaits(ctx, d.Task.ID, d.Task.Generation); err != nil {
		return nil, err
	}
	return out, nil
}

// ReplayPreview implements Store.
func (s *DBStore) ReplayPreview(ctx context.Context, id int64) (*Preview, error) {
	return s.Operator.Preview(ctx, "", id)
}

// RedeliveryPreview implements Store.
func (s *DBStore) RedeliveryPreview(ctx context.Context, id int64) (*Redelivery, error) {
	return s.Operator.PreviewRedelivery(ctx, operator.RedeliverParams{TaskID: id})
}

// Redeliver implements Store.
func (s *DBStore) Redeliver(ctx context.Context, id int64) (*Redelivery, error) {
	return s.Operator.Redeliver(ctx, operator.RedeliverParams{TaskID: id})
}

// Replay implements Store.
func (s *DBStore) Replay(ctx context.Context, id int64) (*agentledger.Task, error) {
	p, err := s.Operator.Replay(ctx, "", id)
	if err != nil {
		return nil, err
	}
	return p.Task, nil
}

// Rerun implements Store.
func (s *DBStore) Rerun(ctx context.Context, id int64) (*agentledger.Task, error) {
	return s.Operator.Rerun(ctx, "", id)
}

// Unsettled implements Store.
func (s *DBStore) Unsettled(ctx context.Context, id int64) (*operator.UnsettledError, error) {
	return s.Operator.Unsettled(ctx, "", id)
}

// Cancel implements Store.
func (s *DBStore) Cancel(ctx context.Context, id int64) (*agentledger.Task, error) {
	return s.Operator.CancelBy(ctx, "", id, s.actor()) // "": any tenant
}

// Retry implements Store.
func (s *DBStore) Retry(ctx context.Context, id int64) (*agentledger.Task, error) {
	return s.Operator.Retry(ctx, "", id)
}

// CompensationPreview implements Store.
func (s *DBStore) CompensationPreview(ctx context.Context, id int64) (*UndoPlan, error) {
	return s.Operator.PlanCompensation(ctx, "", id)
}

// Compensate implements Store, on the console user's request (actor).
func (s *DBStore) Compensate(ctx context.Context, id int64) (*agentledger.Task, error) {
	return s.Operator.CompensateBy(ctx, "", id, s.actor())
}

// Resolve implements Store: the unknown effect at step of the current
// generation is settled, then a task that needs attention is replayed.
func (s *DBStore) Resolve(ctx context.Context, id int64, step string, r Resolution) (operator.ResolveOutcome, error) {
	return s.Operator.ResolveTask(ctx, "", id, step, r)
}

// RetryAll implements Store.
func (s *DBStore) RetryAll(ctx context.Context, f Filter) (operator.BulkResult, error) {
	return s.Operator.RetryAll(ctx, f.params())
}

// CancelAll implements Store. It names the states, bulkStates' as the
// confirmation counted them, so that the count and the cancel agree.
func (s *DBStore) CancelAll(ctx context.Context, f Filter) (operator.BulkResult, error) {
	p := f.params()
	if p.States = bulkStates(bulkCancel, f); len(p.States) == 0 {
		return operator.BulkResult{Skipped: map[int64]string{}}, nil // a state filter on finished tasks: none to cancel
	}
	return s.Operator.CancelAllBy(ctx, p, s.actor())
}

// actor is who the console's cancels and compensations are by, as
// agentctl cancel and compensate record their user ("operator:alice");
// "operator:console" when the system cannot name the user.
func (s *DBStore) actor() string { return operator.Actor(cmp.Or(s.User, "console")) }

// Workers implements Store.
func (s *DBStore) Workers(ctx context.Context) ([]operator.Worker, error) {
	return s.Operator.Workers(ctx)
}

// Shares implements Store.
func (s *DBStore) Shares(ctx context.Context) ([]operator.Share, error) {
	return s.Operator.Shares(ctx)
}

// Limits implements Store.
func (s *DBStore) Limits(ctx context.Context) ([]flow.Limit, error) {
	return s.Flow.List(ctx)
}

// Usage implements Store.
func (s *DBStore) Usage(ctx context.Context) ([]flow.Use, error) {
	return s.Flow.Usage(ctx)
}

// Breakers implements Store.
func (s *DBStore) Breakers(ctx context.Context) ([]flow.BreakerState, time.Time, error) {
	return s.Flow.Breakers(ctx)
}

// PendingApprovals implements Store.
func (s *DBStore) PendingApprovals(ctx context.Context, after *approvals.Position, limit int) ([]approvals.Request, int64, error) {
	var n int64
	// The partial index on pending requests keeps this count cheap.
	if err := s.db.QueryRow(ctx, `/* tui.pending_approvals */ SELECT count(*) FROM approvals WHERE state = 'pending'`).Scan(&n); err != nil {
		return nil, 0, fmt.Errorf("counting pending approval requests: %w", err)
	}
	if limit == 0 || n == 0 {
		return nil, n, nil
	}
	rs, err := s.Approvals.List(ctx, approvals.ListParams{Limit: limit, After: after})
	return rs, n, err
}

// Approval implements Store.
func (s *DBStore) Approval(ctx context.Context, id int64) (approvals.Request, error) {
	return s.Approvals.Get(ctx, "", id)
}

// Decide implements Store: the decision is the console's, made by User.
func (s *DBStore) Decide(ctx context.Context, id int64, approve bool, reason string) (approvals.Request, bool, error) {
	return s.Approvals.Decide(ctx, approvals.Decision{ID: id, Approve: approve, By: s.User, Via: "console", Reason: reason})
}
