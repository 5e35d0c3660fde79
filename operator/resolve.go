package operator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentledger/agentledger"
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
	out, err := s.ResolveTask(ctx, tenant, id, step, r)
	return out.Task, err
}

// ResolveOutcome is what a resolution did: the task as it left it, and
// whether it sent the task back (it needed attention when the resolution
// read it) or left it as it was.
type ResolveOutcome struct {
	Task     *agentledger.Task
	Requeued bool
}

// Where says, in the past tense (a message stays while the task moves on),
// where the resolution left the task: back in the queue if it requeued
// it, else as it was. The task is read after the requeue, so a worker may
// hold it already: it went back all the same.
func (o ResolveOutcome) Where() string {
	t := o.Task
	switch {
	case !o.Requeued:
		return "the task stays " + string(t.State)
	case t.State == agentledger.StateQueued || t.State == agentledger.StateCompensating:
		return "the task went back to " + string(t.State)
	case t.State == agentledger.StateRunning:
		return "the task went back to the queue, and a worker has it already"
	}
	return "the task went back to the queue, and is " + string(t.State) + " now"
}

// ResolveTask is Resolve, saying whether the task went back.
func (s *Service) ResolveTask(ctx context.Context, tenant string, id int64, step string, r Resolution) (ResolveOutcome, error) {
	t, requeued, err := s.resolve(ctx, tenant, id, step, r)
	return ResolveOutcome{Task: t, Requeued: requeued}, err
}

func (s *Service) resolve(ctx context.Context, tenant string, id int64, step string, r Resolution) (*agentledger.Task, bool, error) {
	switch {
	case step == "":
		return nil, false, agentledger.Invalid("step", "give the step path of the unknown effect (the task's journal lists it)")
	case r.Note == "":
		return nil, false, agentledger.Invalid("note", "say why the effect is resolved this way")
	}
	t, j, err := s.load(ctx, tenant, id)
	if err != nil {
		return nil, false, err
	}
	// An unknown outcome first; for "done", a compensation that failed
	// for good and the operator undid by hand (a built call's row before
	// an unbuilt record: a step holds one or the other). A pending one
	// is not taken: it may have been sent, and a replay decides.
	var unknown, failed, pending, done *ledger.Entry
	compensation := strings.HasPrefix(step, ledger.CompensationPrefix)
	for i := range j {
		switch e := &j[i]; {
		case e.StepPath != step:
		case e.State == ledger.StateUnknown:
			unknown = e
		case compensation && e.State == ledger.StateFailed && (failed == nil || failed.Unbuilt()):
			failed = e
		case compensation && e.State == ledger.StatePending:
			pending = e
		case compensation && e.State == ledger.StateCompleted:
			done = e
		}
	}
	target := unknown
	switch {
	case target != nil:
	case r.Done && failed != nil:
		target = failed
	case failed != nil:
		// Not taken as "retry": a failed call is sent again by a replay
		// already, and one that never rendered never will be.
		return nil, false, agentledger.Invalid("resolution", "the compensation at %s failed (agentctl show %d says why): if "+
			"its cause can be fixed, fix it and replay task %d to send it again; otherwise make sure the effect was not "+
			"undone already, undo it by hand and resolve it as done", step, id, id)
	case pending != nil && t.State != agentledger.StateNeedsAttention:
		return nil, false, agentledger.Errorf(agentledger.CodeConflict, "the compensation at %s is being sent (task %d is %s): "+
			"agentctl show %d follows it", step, id, t.State, id)
	case pending != nil:
		return nil, false, agentledger.Errorf(agentledger.CodeConflict, "the compensation at %s is pending: it may have been sent, "+
			"so it is not resolved by hand; replay task %d once its cause is fixed, and the ledger decides whether it "+
			"goes out again (an unsafe one of unknown outcome is then yours to resolve)", step, id)
	case done != nil:
		return nil, false, resolvedAlready(t, step, *done)
	}
	if target == nil {
		return nil, false, &NoUnknownEffectError{TaskID: id, Step: step, Unknown: unknownSteps(j), FailedCompensations: failedCompensations(j)}
	}
	res := ledger.Resolution{Done: r.Done, Retry: !r.Done, Note: r.Note}
	err = s.ledger.Resolve(ctx, target.Tenant, target.Operation, target.Key, res)
	if errors.Is(err, agentledger.ErrNotFound) && target.Unbuilt() {
		// Resolved by another operator meanwhile, or taken away by an
		// attempt that built its call since: say which.
		if t2, j2, lerr := s.load(ctx, tenant, id); lerr == nil {
			for _, e := range j2 {
				if e.Key == target.Key && e.Operation == target.Operation && e.State == ledger.StateCompleted {
					return nil, false, resolvedAlready(t2, step, e)
				}
			}
		}
		return nil, false, agentledger.Errorf(agentledger.CodeConflict, "the compensation at %s is being sent by an attempt that "+
			"could build it since: nothing resolved (agentctl show %d follows it)", step, id)
	}
	if err != nil {
		return nil, false, err
	}
	if t.State == agentledger.StateNeedsAttention {
		// From needs_attention only: a task cancelled or sent back by
		// someone else since it was read is not replayed by this.
		requeued, err := s.requeue(ctx, tenant, id, replay, parkedStates)
		if err == nil || !errors.Is(err, agentledger.ErrConflict) {
			return requeued, err == nil, err
		}
		// A task still parked was refused for a reason of its own (its
		// ledger rows gone): that is the answer.
		if cur, gerr := s.tasks.Get(ctx, tenant, id); gerr != nil || cur.State == agentledger.StateNeedsAttention {
			return nil, false, err
		}
	}
	// Left as it is: as it stands now.
	t, err = s.tasks.Get(ctx, tenant, id)
	return t, false, err
}

// parkedStates is the state a resolution requeues a task from.
var parkedStates = []agentledger.TaskState{agentledger.StateNeedsAttention}

// Resolved says what a resolution did to the effect of t (as Resolve
// returned it): marked done, or allowed one more performance, which a
// task undoing its effects never makes (the effect, taken as not
// performed, has nothing to undo).
func Resolved(t *agentledger.Task, done bool) string {
	switch {
	case done:
		return "marked done"
	case t.Compensation != "":
		return "taken as not performed: the compensation has nothing to undo for it"
	}
	return "allowed one more performance"
}

// resolvedAlready is the conflict of resolving the compensation at step
// of t, which e, completed, settles already: an operator's hand (the
// note says) or its call. A parked task goes on with a replay.
func resolvedAlready(t *agentledger.Task, step string, e ledger.Entry) error {
	how := "completed"
	if e.Note != "" {
		how += "; note: " + e.Note
	}
	msg := fmt.Sprintf("the compensation at %s of task %d is settled already (%s)", step, t.ID, how)
	if t.State == agentledger.StateNeedsAttention {
		msg += fmt.Sprintf("; replay task %d to go on undoing the rest", t.ID)
	}
	return agentledger.Errorf(agentledger.CodeConflict, "%s", msg)
}

// UnknownEffects lists the step paths of task id's effects of unknown
// outcome in its current generation: what Resolve settles.
func (s *Service) UnknownEffects(ctx context.Context, tenant string, id int64) ([]string, error) {
	_, j, err := s.load(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	return unknownSteps(j), nil
}

func unknownSteps(j []ledger.Entry) []string {
	var out []string
	for _, e := range j {
		if e.State == ledger.StateUnknown && !slices.Contains(out, e.StepPath) {
			out = append(out, e.StepPath)
		}
	}
	return out
}

// failedCompensations lists the step paths of j's compensations that
// failed for good and have no effect of unknown outcome: what Resolve
// settles as done (and only as done).
func failedCompensations(j []ledger.Entry) []string {
	unknown := unknownSteps(j)
	var out []string
	for _, e := range j {
		if e.State == ledger.StateFailed && strings.HasPrefix(e.StepPath, ledger.CompensationPrefix) &&
			!slices.Contains(unknown, e.StepPath) && !slices.Contains(out, e.StepPath) {
			out = append(out, e.StepPath)
		}
	}
	return out
}

// NoUnknownEffectError says that a task has nothing to resolve at a step,
// and at which steps it has: effects of unknown outcome, and compensations
// that failed for good. It matches agentledger.ErrNotFound.
type NoUnknownEffectError struct {
	TaskID int64
	Step   string
	// Unknown are the steps of the task's effects of unknown outcome.
	Unknown []string
	// FailedCompensations are the steps of the task's compensations that
	// failed for good, which are resolved as done.
	FailedCompensations []string
}

func (e *NoUnknownEffectError) Error() string {
	msg := fmt.Sprintf("task %d has no effect of unknown outcome at step %q", e.TaskID, e.Step)
	if len(e.Unknown)+len(e.FailedCompensations) == 0 {
		return msg + ", nor at any other"
	}
	switch len(e.Unknown) {
	case 0:
	case 1:
		msg += "; its unknown effect is at " + e.Unknown[0]
	default:
		msg += "; its unknown effects are at " + strings.Join(e.Unknown, ", ")
	}
	switch len(e.FailedCompensations) {
	case 0:
	case 1:
		msg += "; its compensation at " + e.FailedCompensations[0] + " failed for good and can be resolved as done"
	default:
		msg += "; its compensations at " + strings.Join(e.FailedCompensations, ", ") + " failed for good and can be resolved as done"
	}
	return msg
}

// Is makes errors.Is(err, agentledger.ErrNotFound) true.
func (e *NoUnknownEffectError) Is(target error) bool { return target == agentledger.ErrNotFound }
