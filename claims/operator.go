package claims

import (
	"context"
	"fmt"
	"slices"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/tracing"
)

// RequeueMode says how an operator runs a finished task again.
type RequeueMode int

// The requeue modes. Their values are the generation step requeueSQL adds.
const (
	// Replay runs the task again in the same generation: effects the ledger
	// has completed are served from it, only unfinished ones run.
	Replay RequeueMode = 0
	// Rerun runs the task again as a new intent: the generation is bumped,
	// so every effect key changes and every effect runs again.
	Rerun RequeueMode = 1
)

// Replayable are the states an operator may replay or re-run a task from:
// no worker holds it.
var Replayable = []agentledger.TaskState{agentledger.StateSucceeded, agentledger.StateDead,
	agentledger.StateCancelled, agentledger.StateNeedsAttention}

// replayable is Replayable as the SQL takes it.
var replayable = func() []string {
	out := make([]string, len(Replayable))
	for i, s := range Replayable {
		out[i] = string(s)
	}
	return out
}()

// Requeue replays (mode Replay) or re-runs (mode Rerun) task id, restricted
// to tenant unless empty. It returns the task as queued. ErrNotFound for an
// unknown task; ErrConflict while the task is queued or running, and for a
// replay of a task whose ledger rows retention has removed.
func (s *Store) Requeue(ctx context.Context, tenant string, id int64, mode RequeueMode) (*agentledger.Task, error) {
	if mode == Rerun {
		return s.requeue(ctx, tenant, id, mode, rerunnable)
	}
	return s.requeue(ctx, tenant, id, mode, replayable)
}

// ReplayCompensated is the conflict of replaying compensated task id,
// which says what to do instead (the console words its refusal so too).
func ReplayCompensated(id int64) error {
	return agentledger.Errorf(agentledger.CodeConflict, "task %d is compensated: its effects were undone, and a replay "+
		"would neither do them again nor undo them twice; re-run it as a new intent instead", id)
}

// rerunnable adds compensated to replayable: a task whose effects were
// undone may run again as a new intent, not be replayed.
var rerunnable = append(slices.Clip(replayable), string(agentledger.StateCompensated))

func (s *Store) requeue(ctx context.Context, tenant string, id int64, mode RequeueMode, from []string) (*agentledger.Task, error) {
	if mode != Replay && mode != Rerun {
		return nil, agentledger.Invalid("mode", "unknown requeue mode %d", mode)
	}
	var before string
	var expired, changed bool
	var woke int64
	ctx, span := tracing.Start(ctx, "agentledger.requeue", trace.WithAttributes(tracing.TaskID.Int64(id),
		attribute.Bool("agentledger.requeue.rerun", mode == Rerun)))
	defer span.End()
	err := s.lockedRow(ctx, id, tenant, requeueSQL, []any{id, tenant, int(mode), from, s.Now.Param(), nullable(tracing.TraceParent(ctx))},
		&before, &expired, &changed, &woke)
	if err != nil {
		if err := notFound(err); err == agentledger.ErrNotFound {
			return nil, taskNotFound(id, tenant)
		}
		return nil, fmt.Errorf("requeue: %w", err)
	}
	if !changed && expired && mode == Replay {
		return nil, agentledger.Errorf(agentledger.CodeConflict, "task %d finished so long ago that retention removed its ledger rows: a replay would "+
			"perform its effects again; re-run it as a new intent instead", id)
	}
	if !changed && mode == Replay && before == string(agentledger.StateCompensated) {
		return nil, ReplayCompensated(id)
	}
	if !changed {
		how := "be replayed"
		if mode == Rerun {
			how = "be re-run"
		}
		return nil, agentledger.Errorf(agentledger.CodeConflict, "task %d is %s; only a %s task can %s",
			id, before, agentledger.OneOf(from), how)
	}
	return s.Get(ctx, tenant, id)
}
