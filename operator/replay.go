package operator

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/approvals"
	"github.com/agentledger/agentledger/ledger"
)

// PlannedEffect is one recorded effect and what a replay does with it.
type PlannedEffect struct {
	Effect
	Plan ledger.Plan `json:"plan"`
	// Refused says why the tenant's grant in force would stop a replay
	// at this effect; empty when it allows it.
	Refused string `json:"refused,omitempty"`
}

// Preview is what a replay of a task would do, effect by effect; effects
// the journal has no row for yet run for the first time.
type Preview struct {
	Task    *agentledger.Task
	Effects []PlannedEffect
	// Refused are the calls of its generation a person did not approve
	// (RefusedCalls): the replay meets the same refusal there.
	Refused []approvals.Request
}

// Plan plans every effect of task t's journal (ledger.PlanOf) for a
// replay; on the forward path its last effect, failed and pure, runs again
// (ledger.Reread).
func Plan(t *agentledger.Task, journal []ledger.Entry) []PlannedEffect {
	out := make([]PlannedEffect, len(journal))
	for i, e := range journal {
		out[i] = PlannedEffect{Effect: EffectOf(e), Plan: ledger.PlanOf(e)}
	}
	if i := ledger.Reread(journal); i >= 0 && t.Compensation == "" {
		out[i].Plan = ledger.PlanRun
	}
	return out
}

// Preview says what a replay of task id would do, and changes nothing. A
// task that cannot be replayed now is a conflict: the preview must not
// promise what the replay would refuse.
func (s *Service) Preview(ctx context.Context, tenant string, id int64) (*Preview, error) {
	t, j, err := s.load(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	if !Replayable(t.State) {
		return nil, notReplayable(t)
	}
	if err := stopsAtUnknown(t, j); err != nil {
		return nil, err
	}
	if err := s.refusedStep(ctx, tenant, t, "replay"); err != nil {
		return nil, err
	}
	// As the replay itself refuses it: its journal is gone.
	var expired bool
	if err := s.db.QueryRow(ctx, `/* operator.ledger_expired */ SELECT ledger_expired_at IS NOT NULL FROM tasks WHERE id = $1`, t.ID).Scan(&expired); err != nil {
		return nil, fmt.Errorf("replay preview: %w", err)
	}
	if expired {
		return nil, ledgerExpired(t.ID)
	}
	p := &Preview{Task: t, Effects: Plan(t, j)}
	if err := s.refuseUngranted(ctx, t, p.Effects); err != nil {
		return nil, err
	}
	if p.Refused, err = s.RefusedCalls(ctx, tenant, t); err != nil {
		return nil, fmt.Errorf("replay preview: %w", err)
	}
	return p, nil
}

// Replay runs task id again in the same generation: completed effects are
// served from the ledger, only unfinished ones run. It returns the plan it
// queued the task with.
func (s *Service) Replay(ctx context.Context, tenant string, id int64) (*Preview, error) {
	cur, j, err := s.load(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	if err := stopsAtUnknown(cur, j); err != nil {
		return nil, err
	}
	if Replayable(cur.State) { // another state is refused as it stands, below
		if err := s.refusedStep(ctx, tenant, cur, "replay"); err != nil {
			return nil, err
		}
	}
	t, err := s.requeue(ctx, tenant, id, replay, ReplayableStates)
	if err != nil {
		return nil, err
	}
	p := &Preview{Task: t, Effects: Plan(t, j)}
	// As the preview marks them. The replay is queued whatever the marks
	// say, so a grant that cannot be read leaves them out, not the replay.
	_ = s.refuseUngranted(ctx, t, p.Effects)
	return p, nil
}

// Rerun runs task id again as a new intent: its generation moves on, so
// every effect runs again. It refuses (ErrConflict, *UnsettledError) a task
// whose current generation has an effect whose outcome is not known — one
// that is unknown, or pending with no attempt to finish it: that call may
// have gone out, and the new intent would send another under a new key.
// RerunAnyway runs it all the same.
func (s *Service) Rerun(ctx context.Context, tenant string, id int64) (*agentledger.Task, error) {
	t, j, err := s.load(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(rerunnable, t.State) {
		// Refused as the re-run would refuse it, without the re-run: a
		// running task that parks meanwhile is not re-run unchecked.
		return nil, agentledger.Errorf(agentledger.CodeConflict, "task %d is %s; only a %s task can be re-run",
			id, t.State, agentledger.OneOf(rerunnable))
	}
	if u := unsettled(id, j); u != nil {
		return nil, u
	}
	return s.RerunAnyway(ctx, tenant, id)
}

// Unsettled is what Rerun would refuse task id for: its effects whose
// outcome is not known (nil when none), read now, for a preview.
func (s *Service) Unsettled(ctx context.Context, tenant string, id int64) (*UnsettledError, error) {
	_, j, err := s.load(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	return unsettled(id, j), nil
}

// unsettled is the UnsettledError of task id's journal j, nil when every
// effect's outcome is known.
func unsettled(id int64, j []ledger.Entry) *UnsettledError {
	u := &UnsettledError{TaskID: id}
	for _, e := range j {
		switch {
		case e.State == ledger.StateUnknown && !e.RetryAllowed: // resolved "retry", it did not happen: settled
			u.Unknown = append(u.Unknown, e.StepPath)
		case e.State == ledger.StatePending:
			u.Pending = append(u.Pending, e.StepPath)
		}
	}
	if len(u.Unknown)+len(u.Pending) == 0 {
		return nil
	}
	return u
}

// RerunAnyway is Rerun without its check of unsettled effects: for an
// operator who knows what those calls did.
func (s *Service) RerunAnyway(ctx context.Context, tenant string, id int64) (*agentledger.Task, error) {
	return s.requeue(ctx, tenant, id, rerun, rerunnable)
}

// UnsettledError refuses the re-run of a task with effects whose outcome
// is not known. It matches agentledger.ErrConflict.
type UnsettledError struct {
	TaskID int64
	// Unknown are the steps of its effects of unknown outcome (resolve
	// settles them); Pending those of effects reserved by an attempt that
	// did not finish them (a replay takes them over).
	Unknown, Pending []string
}

func (e *UnsettledError) Error() string {
	return fmt.Sprintf("task %d has effects whose outcome is not known, at %s: each may have been performed, "+
		"and a re-run would perform it again under a new key",
		e.TaskID, strings.Join(append(slices.Clone(e.Unknown), e.Pending...), ", "))
}

func (e *UnsettledError) Is(target error) bool { return target == agentledger.ErrConflict }

// StopsAtUnknownError refuses the replay (and its preview) of a task
// with an effect of unknown outcome: every attempt that reaches the
// effect stops there, and a replay reaches it — the earlier effects are
// served — so it would park again at once, an attempt spent for nothing.
// An operator settles the effect first (Resolve). It matches
// agentledger.ErrConflict.
type StopsAtUnknownError struct {
	Task  *agentledger.Task
	Steps []string // the effects of unknown outcome, by step
}

func (e *StopsAtUnknownError) Error() string {
	how := "which replays it"
	if e.Task.State != agentledger.StateNeedsAttention {
		how = "then replay it" // Resolve requeues only a parked task
	}
	return fmt.Sprintf("task %d has an effect of unknown outcome at %s: a replay would stop there again; settle it first "+
		"with agentctl resolve %d --step %s (--done | --retry) --note TEXT, %s",
		e.Task.ID, strings.Join(e.Steps, ", "), e.Task.ID, e.Steps[0], how)
}

func (e *StopsAtUnknownError) Is(target error) bool { return target == agentledger.ErrConflict }

// stopsAtUnknown is the StopsAtUnknownError of t and its journal j, or nil.
func stopsAtUnknown(t *agentledger.Task, j []ledger.Entry) error {
	if u := unsettled(t.ID, j); u != nil && len(u.Unknown) > 0 {
		return &StopsAtUnknownError{Task: t, Steps: u.Unknown}
	}
	return nil
}

func notReplayable(t *agentledger.Task) error {
	if t.State == agentledger.StateCompensated {
		return ReplayCompensated(t.ID) // as the replay itself explains
	}
	return agentledger.Errorf(agentledger.CodeConflict, "task %d is %s; only a %s task can be replayed",
		t.ID, t.State, agentledger.OneOf(ReplayableStates))
}
