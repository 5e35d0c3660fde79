package saga

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/internal/refs"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/tools"
)

// Journal reads a task generation's effects, marks an abandoned one
// unknown, and records one that could not be built as failed until it is
// (*ledger.Ledger has them all).
type Journal interface {
	Journal(ctx context.Context, taskID int64, generation int32) ([]ledger.Entry, error)
	Abandoned(ctx context.Context, taskID int64, e ledger.Entry, why string) error
	Unbuilt(ctx context.Context, a ledger.Attempt, stepPath, operation, why string) (ledger.UnbuiltOutcome, error)
	ClearUnbuilt(ctx context.Context, a ledger.Attempt, stepPath string) (bool, error)
}

// Handler is a task kind (worker.Handler).
type Handler interface {
	Work(ctx context.Context, t *agentledger.Task) (json.RawMessage, error)
}

// Undoer runs compensation phases.
type Undoer struct {
	Ledger  tools.Doer
	Journal Journal
	Tools   *tools.Registry
	// Grants, when set, give each task's tenant grant: a compensation is
	// a tool call like any other and must be allowed by the grant in
	// force when it runs (read before each one, as Call does). Unused
	// when Path is set.
	Grants grants.Source
	// Path, when set, is the effect path compensations and Call take (the
	// daemon's, shared by every kind, with its interceptors); nil: one of
	// the Undoer's own over its Ledger, Tools and Grants.
	Path *tools.Path

	once sync.Once
}

// path is the Path the Undoer's effects take; its own is built once.
func (u *Undoer) path() *tools.Path {
	u.once.Do(func() {
		if u.Path == nil {
			u.Path = &tools.Path{Ledger: u.Ledger, Tools: u.Tools, Grants: u.Grants}
		}
	})
	return u.Path
}

// Phase returns h for tasks on their forward path and u for tasks in their
// compensation phase: whatever the kind, undoing is the same. h's context
// carries u's ledger and tools, for Call.
func Phase(h Handler, u *Undoer) Handler { return phase{h, u} }

type phase struct {
	forward Handler
	undo    *Undoer
}

func (p phase) Work(ctx context.Context, t *agentledger.Task) (json.RawMessage, error) {
	if t.Compensation != "" {
		return p.undo.Work(ctx, t)
	}
	return p.forward.Work(context.WithValue(ctx, invokerKey{}, p.undo), t)
}

// Result is one compensation's outcome in the result of a compensated
// task.
type Result struct {
	// Undoes is the journal place of the effect undone.
	Undoes      string          `json:"undoes"`
	Tool        string          `json:"tool"`
	Status      int             `json:"status,omitempty"`
	Body        json.RawMessage `json:"body,omitempty"`
	ExternalRef string          `json:"external_ref,omitempty"`
	Replayed    bool            `json:"replayed,omitempty"`
	// Note is the journal row's note: an operator's, for one resolved as
	// done by hand.
	Note string `json:"note,omitempty"`
}

// Work runs t's compensation phase and returns {"compensations":
// [Result…]}, newest undone effect first. A compensation that fails for
// good fails the phase for good (the task parks for an operator); an
// effect of unknown outcome parks it before anything is undone.
func (u *Undoer) Work(ctx context.Context, t *agentledger.Task) (json.RawMessage, error) {
	entries, err := u.Journal.Journal(ctx, t.ID, t.Generation)
	if err != nil {
		return nil, err
	}
	var undo []ledger.Entry
	done := map[string]ledger.Entry{} // completed compensations by step path
	unbuilt := map[string]bool{}      // compensations recorded unbuilt, not resolved, by step path
	for _, e := range entries {
		if _, ok := Undoes(e.StepPath); ok {
			switch {
			case e.State == ledger.StateCompleted:
				done[e.StepPath] = e
			case e.Unbuilt():
				unbuilt[e.StepPath] = true
			}
		}
		if !ToUndo(e) {
			continue
		}
		switch e.State {
		case ledger.StateCompleted:
			undo = append(undo, e)
		case ledger.StateUnknown:
			return nil, unknown(t, e)
		case ledger.StatePending:
			// Left by an attempt that is gone (this one has done nothing
			// yet): it may or may not have happened.
			if err := u.Journal.Abandoned(ctx, t.ID, e, "its attempt ended before recording the outcome; "+
				"the task is undoing its effects"); err != nil {
				return nil, err
			}
			return nil, unknown(t, e)
		}
	}
	// Newest completion first; the journal's order breaks ties.
	slices.SortStableFunc(undo, func(a, b ledger.Entry) int { return -cmp.Compare(completedAt(a), completedAt(b)) })
	out := make([]Result, 0, len(undo))
	for _, e := range undo {
		if c, ok := done[PathOf(e.StepPath)]; ok {
			// Undone already, by an attempt before this one or by an
			// operator's hand (an unbuilt one resolved as done): served,
			// not built again.
			out = append(out, Result{Undoes: e.StepPath, Tool: toolOf(e), Status: c.Result.Status, Body: c.Result.Body,
				ExternalRef: c.Result.ExternalRef, Replayed: true, Note: c.Note})
			continue
		}
		r, err := u.undo(ctx, t, e, unbuilt[PathOf(e.StepPath)])
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return json.Marshal(struct {
		Compensations []Result `json:"compensations"`
	}{out})
}

// toolOf is the tool of e's compensation; "" if it is not readable.
func toolOf(e ledger.Entry) string {
	var c Compensation
	_ = json.Unmarshal(e.Compensate, &c)
	return c.Tool
}

// undo runs the compensation of the completed effect e; unbuilt says an
// attempt before recorded it as one that could not be sent.
func (u *Undoer) undo(ctx context.Context, t *agentledger.Task, e ledger.Entry, unbuilt bool) (Result, error) {
	var c Compensation
	if err := json.Unmarshal(e.Compensate, &c); err != nil {
		return Result{}, u.unbuilt(ctx, t, e, c, false, fmt.Errorf("is not readable: %v", err))
	}
	self, err := refs.View(e.Result)
	if err != nil {
		return Result{}, u.unbuilt(ctx, t, e, c, false, err)
	}
	args, err := c.resolve(self)
	if err != nil {
		return Result{}, u.unbuilt(ctx, t, e, c, false, err)
	}
	if unbuilt {
		// Built now: the ledger records the call under its own operation,
		// and the step keeps no record that it could not be. A record
		// resolved as done since the journal was read stands, and the
		// call is not sent: the next attempt serves it.
		cleared, err := u.Journal.ClearUnbuilt(ctx, tools.AttemptOf(t), PathOf(e.StepPath))
		if err != nil {
			return Result{}, err
		}
		if !cleared {
			return Result{}, fmt.Errorf("the compensation of %s: its record changed while this attempt ran (resolved by an "+
				"operator?), so it is read again", e.StepPath)
		}
	}
	o := &tools.Outgoing{ToolName: c.Tool, Call: tools.Call{Task: t, StepPath: PathOf(e.StepPath), Args: args}}
	res, err := u.path().Perform(ctx, o)
	var failed *ledger.FailedError
	switch {
	case err != nil && o.Tool == nil && errors.As(err, new(*agentledger.PermanentError)):
		// No such tool here, for good: recorded, so that an operator can
		// settle it by hand, or register the tool and replay.
		return Result{}, u.unbuilt(ctx, t, e, c, true, err)
	case err != nil && o.Tool == nil: // the lookup failed for now (an MCP server not connected)
		return Result{}, u.unsent(ctx, t, e, c, unbuilt && o.Effect.Operation == "", fmt.Errorf("the compensation of %s: %w", e.StepPath, err))
	case errors.As(err, &failed):
		return Result{}, agentledger.Permanent(fmt.Errorf("the compensation of %s (%s) failed: %s", e.StepPath, c.Tool, failed.Message))
	case errors.Is(err, agentledger.ErrKeyReuse):
		return Result{}, agentledger.Permanent(fmt.Errorf("the compensation of %s (%s) differs from the one recorded for it: %w",
			e.StepPath, c.Tool, err))
	case errors.As(err, new(*agentledger.PermanentError)):
		// Refused before the ledger took it (its arguments, the grant, a
		// pure call): this attempt sent nothing, and the same call is
		// refused again until the cause is fixed.
		return Result{}, u.unbuilt(ctx, t, e, c, true, err)
	case err != nil:
		// Put back only where the effect was never built (the grant could
		// not be read): one built may have gone out, and a keyed call
		// that failed for now leaves no row to say so.
		return Result{}, u.unsent(ctx, t, e, c, unbuilt && o.Effect.Operation == "", fmt.Errorf("the compensation of %s (%s): %w", e.StepPath, c.Tool, err))
	}
	return Result{Undoes: e.StepPath, Tool: c.Tool, Status: res.Status, Body: res.Body, ExternalRef: res.ExternalRef,
		Replayed: res.Replayed}, nil
}

// unsent returns err, the retryable failure of e's compensation c, after
// putting back the record this attempt cleared, when cleared says the
// call failed before its effect was built (a lookup or a grant read
// failing for now): should the attempts run out, the task parks with the
// record an operator can resolve, as before this attempt. A call built
// may have been sent, so nothing is recorded for it; where it has a row,
// the row stands.
func (u *Undoer) unsent(ctx context.Context, t *agentledger.Task, e ledger.Entry, c Compensation, cleared bool, err error) error {
	if !cleared {
		return err
	}
	why := fmt.Errorf("the compensation of %s cannot be sent for now: %w", e.StepPath, errors.Unwrap(err))
	if _, rerr := u.Journal.Unbuilt(ctx, tools.AttemptOf(t), PathOf(e.StepPath), cmp.Or(c.Tool, "compensate"), why.Error()); rerr != nil {
		return errors.Join(err, rerr)
	}
	return err
}

// unbuilt fails the compensation c of e for good: it cannot be sent
// (why), and the next attempt would fail alike; fixable says fixing the
// cause lets a replay send it (a refusal: the grant, an allow-list, a
// tool not registered), as an argument that does not render from e's
// result never would. The journal records it failed
// (ledger.Ledger.Unbuilt), for an operator to undo the effect by hand and
// resolve it as done, unless a call of it built before has a row: that
// row says what may have happened, and a replay lets the ledger decide.
func (u *Undoer) unbuilt(ctx context.Context, t *agentledger.Task, e ledger.Entry, c Compensation, fixable bool, why error) error {
	err := fmt.Errorf("the compensation of %s cannot be sent: %w", e.StepPath, why)
	path := PathOf(e.StepPath)
	outcome, rerr := u.Journal.Unbuilt(ctx, tools.AttemptOf(t), path, cmp.Or(c.Tool, "compensate"), err.Error())
	if rerr != nil {
		return rerr
	}
	var advice string
	switch {
	case outcome == ledger.UnbuiltResolved || outcome == ledger.UnbuiltStale:
		// An operator resolved it since the journal was read (or this
		// attempt lost its lease): the next attempt reads it again.
		return fmt.Errorf("the compensation of %s: its record changed while this attempt ran (resolved by an operator?), "+
			"so it is read again", e.StepPath)
	case outcome == ledger.UnbuiltBuilt:
		// A call of it was built before: its row (agentctl show) says
		// what may have happened, and the ledger decides on a replay.
		advice = fmt.Sprintf("a call of it was sent before: its row at %s stands (agentctl show %d); fix the cause and "+
			"replay task %d", path, t.ID, t.ID)
	case fixable:
		// An earlier attempt, before the refusal, may have sent it: a
		// keyed call leaves no row until its answer is recorded.
		advice = fmt.Sprintf("fix the cause and replay task %d (a call an earlier attempt may have sent goes out again "+
			"under its key, not twice); if it cannot be fixed, make sure %s was not undone already, undo it by hand, and "+
			"resolve it as done (agentctl resolve %d --step %s --done --note …)", t.ID, e.StepPath, t.ID, path)
	default:
		// Its arguments never rendered: no attempt ever sent it.
		advice = fmt.Sprintf("undo %s by hand, then resolve it as done (agentctl resolve %d --step %s --done --note …)", e.StepPath, t.ID, path)
	}
	return agentledger.Permanent(fmt.Errorf("%w; %s", err, advice))
}

// ToUndo reports whether the compensation phase has to deal with journal
// entry e: it declared a compensation, did not fail, and was not resolved
// as never performed (unknown with a retry allowed). A completed one is
// undone; any other parks the phase. ledger.UndoableSQL is the same test in
// SQL, made when a task's forward path ends.
func ToUndo(e ledger.Entry) bool {
	return e.Compensate != nil && e.State != ledger.StateFailed && !(e.State == ledger.StateUnknown && e.RetryAllowed)
}

// unknown parks the compensation: e may or may not have happened, and
// undoing it on a guess could undo what never was.
func unknown(t *agentledger.Task, e ledger.Entry) error {
	how := "done: it happened and will be undone; retry: it did not"
	if References(e.Compensate) {
		// Resolved done, it has no answer for ${self…} to read: the
		// compensation could not be built, and the phase would park again.
		how = fmt.Sprintf("its compensation is built from its answer, which no resolution gives: if it happened, look it up "+
			"downstream (agentctl ledger --task %d shows its key) and undo it by hand, resolve it done, replay, and resolve "+
			"its compensation at %s done when the replay says it cannot be sent; retry if it did not happen", t.ID, PathOf(e.StepPath))
	}
	return fmt.Errorf("the effect at %s (%s) has an unknown outcome, so its compensation is not guessed: resolve it "+
		"(agentctl resolve; %s), then replay task %d to go on undoing: %w",
		e.StepPath, e.Operation, how, t.ID, agentledger.ErrNeedsAttention)
}

func completedAt(e ledger.Entry) int64 {
	if e.CompletedAt == nil {
		return 0
	}
	return e.CompletedAt.UnixNano()
}
