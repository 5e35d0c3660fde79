package tui

import (
	"context"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/notify/outbox"
)

// DBStore is the Store over the database: claims for tasks, ledger for
// journals and resolutions, outbox for notifications.
type DBStore struct {
	Claims *claims.Store
	Ledger *ledger.Ledger
	Outbox *outbox.Store
}

// NewDBStore returns the store over db.
func NewDBStore(db claims.DB) *DBStore {
	return &DBStore{Claims: claims.New(db), Ledger: ledger.New(db), Outbox: outbox.NewStore(db)}
}

var _ Store = (*DBStore)(nil)

// params turns a filter into list parameters.
func (f Filter) params() claims.ListParams {
	p := claims.ListParams{Tenant: f.Tenant, Queue: f.Queue, Kind: f.Kind}
	if f.State != "" {
		p.States = []agentledger.TaskState{f.State}
	}
	return p
}

// List implements Store.
func (s *DBStore) List(ctx context.Context, f Filter, before int64, limit int) ([]*agentledger.Task, error) {
	p := f.params()
	p.Before, p.Limit = before, limit
	return s.Claims.List(ctx, p)
}

// Count implements Store.
func (s *DBStore) Count(ctx context.Context, f Filter) (map[agentledger.TaskState]int64, error) {
	return s.Claims.Count(ctx, f.params())
}

// Get implements Store.
func (s *DBStore) Get(ctx context.Context, id int64) (*Detail, error) {
	t, err := s.Claims.Get(ctx, "", id)
	if err != nil {
		return nil, err
	}
	d := &Detail{Task: t}
	if d.Attempts, err = s.Claims.Attempts(ctx, id); err != nil {
		return nil, err
	}
	if d.Journal, err = s.Ledger.Journal(ctx, id, t.Generation); err != nil {
		return nil, err
	}
	if d.Notifications, err = s.Outbox.ForTask(ctx, t.Tenant, id); err != nil {
		return nil, err
	}
	return d, nil
}

// ReplayPreview implements Store.
func (s *DBStore) ReplayPreview(ctx context.Context, id int64) (*Preview, error) {
	t, err := s.Claims.Get(ctx, "", id)
	if err != nil {
		return nil, err
	}
	j, err := s.Ledger.Journal(ctx, id, t.Generation)
	if err != nil {
		return nil, err
	}
	return &Preview{Task: t, Effects: PlanReplay(j)}, nil
}

// Replay implements Store.
func (s *DBStore) Replay(ctx context.Context, id int64) (*agentledger.Task, error) {
	return s.Claims.Requeue(ctx, "", id, claims.Replay)
}

// Rerun implements Store.
func (s *DBStore) Rerun(ctx context.Context, id int64) (*agentledger.Task, error) {
	return s.Claims.Requeue(ctx, "", id, claims.Rerun)
}

// Cancel implements Store.
func (s *DBStore) Cancel(ctx context.Context, id int64) (*agentledger.Task, error) {
	return s.Claims.Cancel(ctx, "", id)
}

// Retry implements Store.
func (s *DBStore) Retry(ctx context.Context, id int64) (*agentledger.Task, error) {
	return s.Claims.Retry(ctx, "", id)
}

// Resolve implements Store the way agentctl resolve does: the unknown
// effect at step of the current generation is settled, then a task that
// needs attention is replayed.
func (s *DBStore) Resolve(ctx context.Context, id int64, step string, r Resolution) (*agentledger.Task, error) {
	t, err := s.Claims.Get(ctx, "", id)
	if err != nil {
		return nil, err
	}
	j, err := s.Ledger.Journal(ctx, id, t.Generation)
	if err != nil {
		return nil, err
	}
	var target *ledger.Entry
	for i := range j {
		if j[i].StepPath == step && j[i].State == ledger.StateUnknown {
			target = &j[i]
		}
	}
	if target == nil {
		return nil, agentledger.Errorf(agentledger.CodeNotFound, "task %d has no effect of unknown outcome at step %q", id, step)
	}
	res := ledger.Resolution{Done: r.Done, Retry: !r.Done, Note: r.Note}
	if err := s.Ledger.Resolve(ctx, target.Tenant, target.Operation, target.Key, res); err != nil {
		return nil, err
	}
	if t.State != agentledger.StateNeedsAttention {
		return t, nil
	}
	return s.Claims.Requeue(ctx, "", id, claims.Replay)
}

// RetryAll implements Store.
func (s *DBStore) RetryAll(ctx context.Context, f Filter) (claims.BulkResult, error) {
	return s.Claims.RetryAll(ctx, f.params())
}

// CancelAll implements Store.
func (s *DBStore) CancelAll(ctx context.Context, f Filter) (claims.BulkResult, error) {
	return s.Claims.CancelAll(ctx, f.params())
}

// Workers implements Store.
func (s *DBStore) Workers(ctx context.Context) ([]claims.Worker, error) {
	return s.Claims.Workers(ctx)
}
