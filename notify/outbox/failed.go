package outbox

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/agentledger/agentledger"
)

// MaxFailedBatch bounds the failed events one call lists or requeues.
const MaxFailedBatch = 1000

// FailedFilter selects failed events: of one task, or of every task with
// All; of one tenant, or of every tenant when Tenant is "".
type FailedFilter struct {
	Tenant string
	TaskID int64
	All    bool
	// Limit is how many at most, oldest first: default and at most
	// MaxFailedBatch.
	Limit int
}

func (f FailedFilter) check() (FailedFilter, error) {
	switch {
	case f.All == (f.TaskID != 0):
		return f, agentledger.Invalid("task", "give one task, or all")
	case f.TaskID < 0:
		return f, agentledger.Invalid("task", "%d is not a task id", f.TaskID)
	case f.Limit < 0 || f.Limit > MaxFailedBatch:
		return f, agentledger.Invalid("limit", "%d is not between 1 and %d", f.Limit, MaxFailedBatch)
	case f.Limit == 0:
		f.Limit = MaxFailedBatch
	}
	return f, nil
}

// FailedEvents lists the failed events of f, oldest first.
func (s *Store) FailedEvents(ctx context.Context, f FailedFilter) ([]Event, error) {
	f, err := f.check()
	if err != nil {
		return nil, err
	}
	return s.events(ctx, failedEventsSQL(!f.All), f.TaskID, f.Tenant, f.Limit)
}

// Requeue makes the failed events of f pending again, due now, their
// failures forgotten, and returns them (oldest first): dispatchers deliver
// them as they do any event, in order per (task, rule). Their effects in
// the ledger are the caller's to reopen (notify.Reopen), in the same
// transaction.
func (s *Store) Requeue(ctx context.Context, f FailedFilter) ([]Event, error) {
	f, err := f.check()
	if err != nil {
		return nil, err
	}
	es, err := s.events(ctx, requeueSQL(!f.All), f.TaskID, f.Tenant, f.Limit, s.Now.Param())
	slices.SortFunc(es, func(a, b Event) int { return cmp.Compare(a.ID, b.ID) })
	return es, err
}

// Move sends the pending event id to channel (a redelivery's event whose
// rule now names another channel, notify.Moves), and reports whether it
// moved: a delivered or claimed event stays where it is.
func (s *Store) Move(ctx context.Context, id int64, channel string) (bool, error) {
	tag, err := s.db.Exec(ctx, moveSQL, id, channel)
	if err != nil {
		return false, fmt.Errorf("outbox: move event %d: %w", id, err)
	}
	return tag.RowsAffected() == 1, nil
}

func (s *Store) events(ctx context.Context, sql string, args ...any) ([]Event, error) {
	rows, err := s.db.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("outbox: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Event, error) {
		var e Event
		err := row.Scan(eventFields(&e)...)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("outbox: %w", err)
	}
	return out, nil
}
