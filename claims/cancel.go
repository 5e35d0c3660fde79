package claims

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/agentledger/agentledger"
)

// Cancel is the operator's cancel of task id (restricted to tenant unless
// empty). A task that is not running is cancelled at once (or, with
// completed effects that declared compensations, starts undoing them); a
// running one is flagged, its attempt sees the flag at its next heartbeat and acknowledges
// with Cancelled. It returns the task as it stands after the call;
// ErrNotFound for an unknown task, ErrConflict for a finished one.
func (s *Store) Cancel(ctx context.Context, tenant string, id int64) (*agentledger.Task, error) {
	var before string
	var changed, undoing bool
	err := s.lockedRow(ctx, id, tenant, cancelSQL, []any{id, tenant, s.Now.Param()}, &before, &changed, &undoing)
	if err != nil {
		if err := notFound(err); err == agentledger.ErrNotFound {
			return nil, taskNotFound(id, tenant)
		}
		return nil, fmt.Errorf("cancel: %w", err)
	}
	if !changed && undoing {
		return nil, agentledger.Errorf(agentledger.CodeConflict, "task %d is undoing its effects (%s): a compensation is not cancelled; "+
			"if one cannot be done it parks the task for you", id, before)
	}
	if !changed {
		return nil, agentledger.Errorf(agentledger.CodeConflict, "task %d already finished (%s)", id, before)
	}
	if err := s.cancelChildren(ctx, tenant, id); err != nil {
		return nil, err
	}
	return s.Get(ctx, tenant, id)
}

// cancelChildren cancels the unfinished children of task id (and theirs):
// a cancelled parent waits for none of them. Each is its own statement, after
// the parent's, so that a child's end (which wakes its parent) and a
// parent's cancel never lock the two rows in opposite orders.
func (s *Store) cancelChildren(ctx context.Context, tenant string, id int64) error {
	rows, err := s.db.Query(ctx, `/* claims.children_to_cancel */ SELECT id FROM tasks
		WHERE parent_id = $1 AND state NOT IN ('succeeded', 'dead', 'cancelled', 'compensated')`, id)
	if err != nil {
		return fmt.Errorf("cancel: the children of task %d: %w", id, err)
	}
	children, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return fmt.Errorf("cancel: the children of task %d: %w", id, err)
	}
	for _, c := range children {
		if _, err := s.Cancel(ctx, tenant, c); err != nil && !errors.Is(err, agentledger.ErrConflict) {
			return fmt.Errorf("cancel: child task %d of task %d: %w", c, id, err)
		}
	}
	return nil
}
