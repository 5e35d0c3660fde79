package claims

import (
	"context"
	"fmt"
	"slices"

	"github.com/agentledger/agentledger"
)

// Compensable are the states from which an operator may ask for a task's
// effects to be undone: no worker holds it and its forward path is over.
var Compensable = []agentledger.TaskState{agentledger.StateSucceeded, agentledger.StateDead,
	agentledger.StateCancelled, agentledger.StateNeedsAttention}

var compensable = func() []string {
	out := make([]string, len(Compensable))
	for i, s := range Compensable {
		out[i] = string(s)
	}
	return out
}()

// Compensate is an operator's request to undo task id's completed effects
// (restricted to tenant unless empty): the task enters its compensation
// phase (state compensating) and a worker runs the compensations its
// completed effects declared, newest first. ErrNotFound for an unknown
// task; ErrConflict when it is queued or running, already undoing or
// undone, or has no completed effect that declared a compensation.
func (s *Store) Compensate(ctx context.Context, tenant string, id int64) (*agentledger.Task, error) {
	var before string
	var undoing, changed bool
	var woke int64
	err := s.lockedRow(ctx, id, tenant, compensateSQL, []any{id, tenant, compensable, s.Now.Param()}, &before, &undoing, &changed, &woke)
	if err != nil {
		if err := notFound(err); err == agentledger.ErrNotFound {
			return nil, taskNotFound(id, tenant)
		}
		return nil, fmt.Errorf("compensate: %w", err)
	}
	switch {
	case changed:
		return s.Get(ctx, tenant, id)
	case before == string(agentledger.StateCompensated):
		return nil, agentledger.Errorf(agentledger.CodeConflict, "task %d is already compensated", id)
	case undoing:
		return nil, agentledger.Errorf(agentledger.CodeConflict, "task %d is already undoing its effects (%s); "+
			"replay it to continue a parked compensation", id, before)
	case !slices.Contains(compensable, before):
		return nil, agentledger.Errorf(agentledger.CodeConflict, "task %d is %s; only a %s task can be compensated",
			id, before, agentledger.OneOf(Compensable))
	}
	return nil, agentledger.Errorf(agentledger.CodeConflict, "task %d has nothing to compensate: none of its completed effects "+
		"declared a compensation", id)
}
