package operator

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/approvals"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/steps"
	"github.com/agentledger/agentledger/tracing"
)

// ReplayableStates are the states a task may be replayed or re-run from:
// no worker holds it.
var ReplayableStates = []agentledger.TaskState{agentledger.StateSucceeded, agentledger.StateDead,
	agentledger.StateCancelled, agentledger.StateNeedsAttention}

// CompensableStates are the states from which an operator may ask for a
// task's completed effects to be undone: no worker holds it and its
// forward path is over.
var CompensableStates = []agentledger.TaskState{agentledger.StateSucceeded, agentledger.StateDead,
	agentledger.StateCancelled, agentledger.StateNeedsAttention}

// Replayable reports whether a task in state may be replayed or re-run.
func Replayable(state agentledger.TaskState) bool { return slices.Contains(ReplayableStates, state) }

// requeueMode says how an operator runs a finished task again. Its values
// are the generation step requeueSQL adds.
type requeueMode int

const (
	// replay runs the task again in the same generation: effects the
	// ledger has completed are served from it, only unfinished ones run.
	replay requeueMode = 0
	// rerun runs the task again as a new intent: the generation is bumped,
	// so every effect key changes and every effect runs again.
	rerun requeueMode = 1
)

// rerunnable adds compensated to the replayable states: a task whose
// effects were undone may run again as a new intent, not be replayed.
var rerunnable = append(slices.Clip(ReplayableStates), agentledger.StateCompensated)

// ReplayCompensated is the conflict of replaying compensated task id,
// which says what to do instead (the console words its refusal so too).
func ReplayCompensated(id int64) error {
	return agentledger.Errorf(agentledger.CodeConflict, "task %d is compensated: its effects were undone, and a replay "+
		"would neither do them again nor undo them twice; re-run it as a new intent instead", id)
}

// Cancel cancels task id (restricted to tenant unless empty). A task that
// is not running is cancelled at once (or, with completed effects that
// declared compensations, starts undoing them); a running one is flagged,
// and its pool told on commit: its attempt stops before its next call (at
// its next heartbeat for a pool that only polls) and acknowledges. The
// task's unfinished children are cancelled after it. It returns the task
// as it stands after the call; ErrNotFound for an unknown task,
// ErrConflict for a finished one.
func (s *Service) Cancel(ctx context.Context, tenant string, id int64) (*agentledger.Task, error) {
	return s.CancelBy(ctx, tenant, id, "")
}

// CancelBy is Cancel on behalf of by, whom the task's last error, its
// withdrawn approval requests and its ended waits name ("tenant:acme, token
// ci-deploy (7)", as the API records its tenants' tokens); "" is the operator.
// Its unfinished children are cancelled on by's behalf too.
func (s *Service) CancelBy(ctx context.Context, tenant string, id int64, by string) (*agentledger.Task, error) {
	var byArg *string
	if by != "" {
		byArg = &by
	}
	var before string
	var changed, undoing bool
	err := s.tasks.LockedRow(ctx, id, tenant, cancelSQL, []any{id, tenant, s.tasks.Now.Param(), byArg}, &before, &changed, &undoing)
	if err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, claims.TaskNotFound(id, tenant)
		}
		return nil, fmt.Errorf("cancel: %w", err)
	}
	if !changed && undoing && before != string(agentledger.StateCompensated) { // compensated: finished, its undo done
		return nil, agentledger.Errorf(agentledger.CodeConflict, "task %d is undoing its effects (%s): a compensation is not cancelled; "+
			"if one cannot be done it parks the task for you", id, before)
	}
	if !changed {
		return nil, agentledger.Errorf(agentledger.CodeConflict, "task %d already finished (%s)", id, before)
	}
	if err := s.cancelChildren(ctx, tenant, id, by); err != nil {
		return nil, err
	}
	return s.tasks.Get(ctx, tenant, id)
}

// cancelChildren cancels the unfinished children of task id (and theirs):
// a cancelled parent waits for none of them. Each is its own statement,
// after the parent's, so that a child's end (which wakes its parent) and a
// parent's cancel never lock the two rows in opposite orders.
func (s *Service) cancelChildren(ctx context.Context, tenant string, id int64, by string) error {
	rows, err := s.db.Query(ctx, `/* operator.children_to_cancel */ SELECT id FROM tasks
		WHERE parent_id = $1 AND state NOT IN ('succeeded', 'dead', 'cancelled', 'compensated')`, id)
	if err != nil {
		return fmt.Errorf("cancel: the children of task %d: %w", id, err)
	}
	children, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return fmt.Errorf("cancel: the children of task %d: %w", id, err)
	}
	for _, c := range children {
		if _, err := s.CancelBy(ctx, tenant, c, by); err != nil && !errors.Is(err, agentledger.ErrConflict) {
			return fmt.Errorf("cancel: child task %d of task %d: %w", c, id, err)
		}
	}
	return nil
}

// Retry runs a dead task again from attempt 1 in the same generation: the
// ledger serves the effects it completed. ErrConflict unless the task is
// dead, when retention removed its ledger rows (re-run it instead), and
// for a steps task whose call failed for good (*ServedFailureError).
func (s *Service) Retry(ctx context.Context, tenant string, id int64) (*agentledger.Task, error) {
	t, j, err := s.load(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	if err := servedFailure(t, j); err != nil {
		return nil, err
	}
	if t.State == agentledger.StateDead { // another state is refused as not dead, below
		if err := s.refusedStep(ctx, tenant, t, "retry"); err != nil {
			return nil, err
		}
	}
	return s.requeue(ctx, tenant, id, replay, []agentledger.TaskState{agentledger.StateDead})
}

// ServedFailureError refuses the retry of a dead steps task whose call
// failed for good: the failure is recorded, a retry is served it again at
// its step, and ends there the same way, an attempt spent for nothing. (A
// Go kind or an agent may go on past a failed call, and is retried.) It
// matches agentledger.ErrConflict.
type ServedFailureError struct {
	TaskID int64
	Step   string
}

func (e *ServedFailureError) Error() string {
	return fmt.Sprintf("task %d's call at %s failed for good, and its failure is recorded: a retry would be served it again "+
		"and end the same way; to call it anew, re-run the task as a new intent (agentctl rerun %d --yes: every effect runs again, "+
		"those that completed too)", e.TaskID, e.Step, e.TaskID)
}

func (e *ServedFailureError) Is(target error) bool { return target == agentledger.ErrConflict }

// servedFailure is the ServedFailureError of t, a dead task, and its
// journal j, or nil.
func servedFailure(t *agentledger.Task, j []ledger.Entry) error {
	if t.State != agentledger.StateDead || t.Kind != steps.Kind {
		return nil
	}
	for _, p := range Plan(t, j) {
		if p.State == ledger.StateFailed && p.Plan == ledger.PlanServed && p.Undoes == "" {
			return &ServedFailureError{TaskID: t.ID, Step: p.Step}
		}
	}
	return nil
}

// RefusedStepError refuses the retry or the replay of a steps task whose
// call at a step was not approved in its generation (denied, timed out,
// or withdrawn by a cancel): the decision stands for the generation, so
// the task would meet it again at that step and fail there for good, an
// attempt spent for nothing. (An agent is told of a refused call and goes
// on, and a Go kind decides: theirs are run again, with a warning.) It
// matches agentledger.ErrConflict.
type RefusedStepError struct {
	TaskID  int64
	Action  string // "retry" or "replay"
	Request approvals.Request
	// Tenant is the tenant that asked ("" for the operator), who is told
	// the way to ask anew that it has: a re-run is the operator's, so a
	// tenant submits the work again as a new task.
	Tenant string
}

func (e *RefusedStepError) Error() string {
	anew := fmt.Sprintf("re-run the task as a new intent (agentctl rerun %d --yes: every effect runs again, those that completed too)", e.TaskID)
	if e.Tenant != "" {
		anew = "submit the work again as a new task, under a new Idempotency-Key (every effect runs again, those that completed too)"
	}
	return fmt.Sprintf("task %d's call at %s was not approved (approval request %d %s): a %s would meet the same refusal there "+
		"and fail the same way, asking nobody; to ask anew, %s", e.TaskID, e.Request.Step, e.Request.ID, RefusedHow(e.Request), e.Action, anew)
}

func (e *RefusedStepError) Is(target error) bool { return target == agentledger.ErrConflict }

// refusedStep is the RefusedStepError of the action on t, or nil: t is a
// steps task with a refused request at one of its steps (tool/N; an
// agent's calls are tool/N/<call>).
func (s *Service) refusedStep(ctx context.Context, tenant string, t *agentledger.Task, action string) error {
	if t.Kind != steps.Kind {
		return nil
	}
	rs, err := s.RefusedCalls(ctx, tenant, t)
	if err != nil {
		return fmt.Errorf("%s: the task's approval requests: %w", action, err)
	}
	for _, r := range rs {
		if steps.IsStepPath(r.Step) {
			return &RefusedStepError{TaskID: t.ID, Action: action, Request: r, Tenant: tenant}
		}
	}
	return nil
}

// requeue replays or re-runs task id from one of the states from. It
// returns the task as queued. ErrNotFound for an unknown task; ErrConflict
// while the task is queued or running, and for a replay of a task whose
// ledger rows retention has removed.
func (s *Service) requeue(ctx context.Context, tenant string, id int64, mode requeueMode, from []agentledger.TaskState) (*agentledger.Task, error) {
	var before string
	var expired, undoing, changed bool
	var woke int64
	ctx, span := tracing.Start(ctx, "agentledger.requeue", trace.WithAttributes(tracing.TaskID.Int64(id),
		attribute.Bool("agentledger.requeue.rerun", mode == rerun)))
	defer span.End()
	var traceParent *string
	if tp := tracing.TraceParent(ctx); tp != "" {
		traceParent = &tp
	}
	err := s.tasks.LockedRow(ctx, id, tenant, requeueSQL, []any{id, tenant, int(mode), texts(from), s.tasks.Now.Param(), traceParent},
		&before, &expired, &undoing, &changed, &woke)
	if err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, claims.TaskNotFound(id, tenant)
		}
		return nil, fmt.Errorf("requeue: %w", err)
	}
	if !changed && undoing && mode == rerun && slices.Contains(from, agentledger.TaskState(before)) {
		return nil, agentledger.Errorf(agentledger.CodeConflict, "task %d is %s while undoing its effects: a re-run now would "+
			"leave them half undone; finish the compensation first (replay it, or resolve what it waits for), then re-run it", id, before)
	}
	if !changed && expired && mode == replay {
		return nil, ledgerExpired(id)
	}
	if !changed && mode == replay && before == string(agentledger.StateCompensated) {
		return nil, ReplayCompensated(id)
	}
	if !changed {
		how := "be replayed"
		if mode == rerun {
			how = "be re-run"
		}
		return nil, agentledger.Errorf(agentledger.CodeConflict, "task %d is %s; only a %s task can %s",
			id, before, agentledger.OneOf(from), how)
	}
	return s.tasks.Get(ctx, tenant, id)
}

// Compensate asks for task id's completed effects to be undone (restricted
// to tenant unless empty): the task enters its compensation phase (state
// compensating) and a worker runs the compensations its completed effects
// declared, newest first. ErrNotFound for an unknown task; ErrConflict
// when it is queued or running, already undoing or undone, or has no
// completed effect that declared a compensation. It records no
// requester: CompensateBy names who asked.
func (s *Service) Compensate(ctx context.Context, tenant string, id int64) (*agentledger.Task, error) {
	return s.CompensateBy(ctx, tenant, id, "")
}

// CompensateBy is Compensate on behalf of by, recorded beside the
// compensation as who asked for it (Requester): "operator:alice" (Actor)
// for agentctl compensate and the console, "tenant:acme, token ci-deploy
// (7)" for the API, as CancelBy records a cancel's; "" records none.
func (s *Service) CompensateBy(ctx context.Context, tenant string, id int64, by string) (*agentledger.Task, error) {
	var byArg *string
	if by != "" {
		byArg = &by
	}
	var before string
	var undoing, changed bool
	var woke int64
	err := s.tasks.LockedRow(ctx, id, tenant, compensateSQL, []any{id, tenant, texts(CompensableStates), s.tasks.Now.Param(), byArg},
		&before, &undoing, &changed, &woke)
	if err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, claims.TaskNotFound(id, tenant)
		}
		return nil, fmt.Errorf("compensate: %w", err)
	}
	if changed {
		return s.tasks.Get(ctx, tenant, id)
	}
	t := &agentledger.Task{ID: id, State: agentledger.TaskState(before)}
	if undoing {
		t.Compensation = "undoing" // in its compensation phase, whatever the reason
	}
	if err := notCompensable(t); err != nil {
		return nil, err
	}
	return nil, agentledger.Errorf(agentledger.CodeConflict, "task %d has nothing to compensate: none of its completed effects "+
		"declared a compensation", id)
}

// texts is states as the statements take them (text[]).
func texts(states []agentledger.TaskState) []string {
	out := make([]string, len(states))
	for i, st := range states {
		out[i] = string(st)
	}
	return out
}

// ledgerExpired is the refusal of a replay (or its preview) of a task whose
// ledger rows retention removed.
func ledgerExpired(id int64) error {
	return agentledger.Errorf(agentledger.CodeConflict, "task %d finished so long ago that retention removed its ledger rows: a replay would "+
		"perform its effects again; re-run it as a new intent instead", id)
}
