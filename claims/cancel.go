package claims

import (
	"context"
	"fmt"

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
	return s.Get(ctx, tenant, id)
}
