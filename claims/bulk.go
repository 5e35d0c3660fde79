package claims

import (
	"context"
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

// IDs returns a page of the filter's task ids, newest first: at most
// limit of them, below before unless it is 0. The operator's bulk actions
// page through it and act on each task with the single-task actions.
func (s *Store) IDs(ctx context.Context, p ListParams, before int64, limit int) ([]int64, error) {
	args, err := p.filterArgs()
	if err != nil {
		return nil, err
	}
	rows, err := s.db.Query(ctx, filteredIDsSQL, append(args, before, limit)...)
	if err != nil {
		return nil, fmt.Errorf("task ids: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("task ids: %w", err)
	}
	return ids, nil
}
