package operator

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/ledger"
)

// Resolution settles an effect of unknown outcome: Done (it happened) or
// not (allow one more performance), with a note saying why.
type Resolution struct {
	Done bool
	Note string
}

// Resolve settles the unknown effect at step of task id's current
// generation and, when the task needs attention, replays it: completed
// effects are served, the rest run. A compensation that failed for good
// may be resolved as done (the operator undid the effect by hand).
func (s *Service) Resolve(ctx context.Context, tenant string, id int64, step string, r Resolution) (*agentledger.Task, error) {
	switch {
	case step == "":
		return nil, agentledger.Invalid("step", "give the step path of the unknown effect (the task's journal lists it)")
	case r.Note == "":
		return nil, agentledger.Invalid("note", "say why the effect is resolved this way")
	}
	t, j, err := s.load(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	var target *ledger.Entry
	for i := range j {
		if j[i].StepPath != step {
			continue
		}
		switch {
		case j[i].State == ledger.StateUnknown:
			target = &j[i]
		case j[i].State == ledger.StateFailed && strings.HasPrefix(step, "compensate/") && r.Done:
			target = &j[i] // a compensation refused for good that the operator did by hand
		case j[i].State == ledger.StateFailed && strings.HasPrefix(step, "compensate/"):
			return nil, agentledger.Invalid("resolution", "the compensation at %s failed: replay task %d to send it "+
				"again once its cause is fixed, or resolve it as done if you undid the effect by hand", step, id)
		}
	}
	if target == nil {
		return nil, &NoUnknownEffectError{TaskID: id, Step: step}
	}
	res := ledger.Resolution{Done: r.Done, Retry: !r.Done, Note: r.Note}
	if err := s.ledger.Resolve(ctx, target.Tenant, target.Operation, target.Key, res); err != nil {
		return nil, err
	}
	if t.State != agentledger.StateNeedsAttention {
		return t, nil
	}
	return s.tasks.Requeue(ctx, tenant, id, claims.Replay)
}

// NoUnknownEffectError says that a task has no effect of unknown outcome at
// a step. It matches agentledger.ErrNotFound.
type NoUnknownEffectError struct {
	TaskID int64
	Step   string
}

func (e *NoUnknownEffectError) Error() string {
	return fmt.Sprintf("task %d has no effect of unknown outcome at step %q", e.TaskID, e.Step)
}

// Is makes errors.Is(err, agentledger.ErrNotFound) true.
func (e *NoUnknownEffectError) Is(target error) bool { return target == agentledger.ErrNotFound }
