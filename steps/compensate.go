package steps

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/tools"
)

// stepPath is step i's place in the journal.
func stepPath(i int) string { return "tool/" + strconv.Itoa(i) }

// compensationPath is the place of step i's compensation in the journal:
// its ledger key is derived from the same task generation and the step it
// undoes, so every run of the compensation phase finds it again.
func compensationPath(i int) string { return "compensate/" + stepPath(i) }

// stepOf reads the step index of a forward step's journal path.
func stepOf(path string) (int, bool) {
	n, ok := strings.CutPrefix(path, "tool/")
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(n)
	return i, err == nil && strconv.Itoa(i) == n
}

// checkCompensable refuses, before step 0 runs, a compensation declared for
// a step whose effect is pure (a GET): it changes nothing. A step whose
// arguments refer to earlier results is checked when it runs.
func (p *Payload) checkCompensable(ts []tools.Tool) error {
	return p.each(func(i int, s Step) error {
		if s.Compensate == nil || references(s.Args) {
			return nil
		}
		call := tools.Call{StepPath: stepPath(i), Args: s.Args, Compensable: true}
		eff, err := ts[i].Effect(call)
		if err != nil {
			return err
		}
		return tools.CheckCompensable(ts[i], call, eff)
	})
}

// CompensationResult is one compensation's outcome in the result of a
// compensated task.
type CompensationResult struct {
	Step        int             `json:"step"`
	Undoes      string          `json:"undoes"`
	Tool        string          `json:"tool"`
	Status      int             `json:"status,omitempty"`
	Body        json.RawMessage `json:"body,omitempty"`
	ExternalRef string          `json:"external_ref,omitempty"`
	Replayed    bool            `json:"replayed,omitempty"`
}

// compensate runs the task's compensation phase: the compensations of the
// steps whose effect completed, newest completion first, each through the
// ledger at compensationPath (a compensation done by an earlier run is
// served, not done again). A step that failed is not undone; one whose
// outcome is unknown parks the task for an operator before anything is
// undone, since undoing an effect that may not have happened is a guess.
// It returns {"compensations": [CompensationResult…]}.
func (r *Runner) compensate(ctx context.Context, task *agentledger.Task, p *Payload, grant *grants.Grant) (json.RawMessage, error) {
	if r.journal == nil {
		return nil, agentledger.Permanent(errors.New("steps: this runner cannot read the journal, so it cannot compensate"))
	}
	entries, err := r.journal.Journal(ctx, task.ID, task.Generation)
	if err != nil {
		return nil, err
	}
	results := make([]any, len(p.Steps))
	var undo []ledger.Entry
	for _, e := range entries {
		i, ok := stepOf(e.StepPath)
		if !ok || i >= len(p.Steps) {
			continue
		}
		switch e.State {
		case ledger.StateCompleted:
			if results[i], err = resultView(e.Result); err != nil {
				return nil, err
			}
			if p.Steps[i].Compensate != nil {
				undo = append(undo, e)
			}
		case ledger.StateFailed: // it did nothing to undo
		case ledger.StateUnknown:
			if p.Steps[i].Compensate != nil && !e.RetryAllowed { // resolved "not performed": nothing to undo
				return nil, unknownForward(task, i, p.Steps[i].Tool)
			}
		case ledger.StatePending:
			// Left by an attempt that is gone (this one has done nothing
			// yet): it may or may not have happened.
			if p.Steps[i].Compensate != nil {
				if err := r.journal.Abandoned(ctx, task.ID, e, "its attempt ended before recording the outcome; "+
					"the task is undoing its effects"); err != nil {
					return nil, err
				}
				return nil, unknownForward(task, i, p.Steps[i].Tool)
			}
		}
	}
	// Newest completion first; the journal's order breaks ties.
	slices.SortStableFunc(undo, func(a, b ledger.Entry) int {
		return -cmp.Compare(completedAt(a), completedAt(b))
	})
	out := make([]CompensationResult, 0, len(undo))
	for _, e := range undo {
		i, _ := stepOf(e.StepPath)
		c := p.Steps[i].Compensate
		res, err := r.undo(ctx, task, i, c, results, grant)
		if err != nil {
			return nil, err
		}
		out = append(out, CompensationResult{Step: i, Undoes: e.StepPath, Tool: c.Tool, Status: res.Status, Body: res.Body,
			ExternalRef: res.ExternalRef, Replayed: res.Replayed})
	}
	return json.Marshal(struct {
		Compensations []CompensationResult `json:"compensations"`
	}{out})
}

// undo runs step i's compensation c. A compensation that fails for good
// fails the phase for good: the task parks for an operator.
func (r *Runner) undo(ctx context.Context, task *agentledger.Task, i int, c *Compensation, results []any, grant *grants.Grant) (ledger.Result, error) {
	t, err := r.tools.Get(c.Tool)
	if err != nil {
		return ledger.Result{}, fmt.Errorf("step %d's compensation: %w", i, err)
	}
	args, err := resolve(c.Args, results)
	if err != nil {
		return ledger.Result{}, fmt.Errorf("step %d's compensation: %w", i, err)
	}
	res, err := tools.Invoke(ctx, r.ledger, t, tools.Call{Task: task, StepPath: compensationPath(i), Args: args, Grant: grant})
	var failed *ledger.FailedError
	switch {
	case errors.As(err, &failed):
		return res, agentledger.Permanent(fmt.Errorf("step %d's compensation (%s) failed: %s", i, c.Tool, failed.Message))
	case errors.Is(err, agentledger.ErrKeyReuse):
		return res, agentledger.Permanent(fmt.Errorf("step %d's compensation (%s): the call differs from the one recorded "+
			"for it: %w", i, c.Tool, err))
	case err != nil:
		return res, fmt.Errorf("step %d's compensation (%s): %w", i, c.Tool, err)
	}
	return res, nil
}

func completedAt(e ledger.Entry) int64 {
	if e.CompletedAt == nil {
		return 0
	}
	return e.CompletedAt.UnixNano()
}

// unknownForward parks the compensation: step i's effect may or may not
// have happened, and undoing it on a guess could undo what never was.
func unknownForward(task *agentledger.Task, i int, tool string) error {
	return fmt.Errorf("step %d (%s) has an effect of unknown outcome, so its compensation is not guessed: resolve it "+
		"(agentctl resolve; done: it happened and will be undone; retry: it did not), then replay task %d to go on undoing: %w",
		i, tool, task.ID, agentledger.ErrNeedsAttention)
}
