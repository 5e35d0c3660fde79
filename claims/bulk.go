package claims

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/internal/pgplan"
)

// Count returns how many tasks of the filter are in each state (p.Before
// and p.Limit are ignored).
func (s *Store) Count(ctx context.Context, p ListParams) (map[agentledger.TaskState]int64, error) {
	args, err := p.filterArgs()
	if err != nil {
		return nil, err
	}
	out := map[agentledger.TaskState]int64{}
	// A count reads every task of the filter: let the planner scan.
	err = pgplan.SeqScan(ctx, s.db, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, countSQL, args...)
		if err != nil {
			return err
		}
		var st string
		var n int64
		_, err = pgx.ForEachRow(rows, []any{&st, &n}, func() error {
			out[agentledger.TaskState(st)] = n
			return nil
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("count tasks: %w", err)
	}
	return out, nil
}

// Retry runs a dead task again from attempt 1 in the same generation: the
// ledger serves the effects it completed. ErrConflict unless the task is
// dead, or when retention removed its ledger rows (re-run it instead).
func (s *Store) Retry(ctx context.Context, tenant string, id int64) (*agentledger.Task, error) {
	return s.requeue(ctx, tenant, id, Replay, []string{string(agentledger.StateDead)})
}

// BulkResult is what a bulk action did.
type BulkResult struct {
	// Done are the tasks acted on.
	Done []int64
	// Skipped are the tasks the action did not apply to, with why.
	Skipped map[int64]string
}

// RetryAll retries every dead task of the filter (whatever its States say),
// page by page. Tasks that cannot be retried (retention removed their
// ledger, or they changed meanwhile) are skipped, with the reason.
func (s *Store) RetryAll(ctx context.Context, p ListParams) (BulkResult, error) {
	p.States = []agentledger.TaskState{agentledger.StateDead}
	return s.each(ctx, p, func(id int64) error {
		_, err := s.Retry(ctx, p.Tenant, id)
		return err
	})
}

// CancelAll cancels every unfinished task of the filter: queued ones at
// once, running ones at their next heartbeat (Cancel).
func (s *Store) CancelAll(ctx context.Context, p ListParams) (BulkResult, error) {
	if len(p.States) == 0 {
		p.States = []agentledger.TaskState{agentledger.StateQueued, agentledger.StateRetrying,
			agentledger.StateRunning, agentledger.StateNeedsAttention}
	}
	return s.each(ctx, p, func(id int64) error {
		_, err := s.Cancel(ctx, p.Tenant, id)
		return err
	})
}

// each runs act on every task of the filter, newest first; ErrConflict and
// ErrNotFound from act skip the task.
func (s *Store) each(ctx context.Context, p ListParams, act func(id int64) error) (BulkResult, error) {
	args, err := p.filterArgs()
	if err != nil {
		return BulkResult{}, err
	}
	res := BulkResult{Skipped: map[int64]string{}}
	var before int64
	for {
		rows, err := s.db.Query(ctx, filteredIDsSQL, append(args, before, 1000)...)
		if err != nil {
			return res, fmt.Errorf("bulk: %w", err)
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return res, fmt.Errorf("bulk: %w", err)
		}
		for _, id := range ids {
			switch err := act(id); {
			case err == nil:
				res.Done = append(res.Done, id)
			case errors.Is(err, agentledger.ErrConflict), errors.Is(err, agentledger.ErrNotFound):
				res.Skipped[id] = err.Error()
			default:
				return res, err
			}
		}
		if len(ids) < 1000 {
			return res, nil
		}
		before = ids[len(ids)-1]
	}
}
