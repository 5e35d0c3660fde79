package steps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/internal/refs"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/tools"
)

// Runner runs steps tasks. It is a worker.Handler.
type Runner struct {
	ledger tools.Doer
	tools  *tools.Registry
	// Grants, when set, give each task's tenant grant, read again before
	// every step (a cache makes that cheap), so that a revoke stops a task
	// in flight before its next step; every step is checked against the
	// grant in force then, on a replay too. Unused when Path is set.
	Grants grants.Source
	// Path, when set, is the effect path the steps take (the daemon's,
	// shared by every kind, with its interceptors); nil: one of the
	// Runner's own over its ledger, tools and Grants.
	Path *tools.Path

	once sync.Once
}

// New returns a Runner that runs tools from reg through l. Its tasks'
// compensation phase is saga.Undoer's (saga.Phase).
func New(l tools.Doer, reg *tools.Registry) *Runner { return &Runner{ledger: l, tools: reg} }

// path is the Path the Runner's effects take; its own is built once.
func (r *Runner) path() *tools.Path {
	r.once.Do(func() {
		if r.Path == nil {
			r.Path = &tools.Path{Ledger: r.ledger, Tools: r.tools, Grants: r.Grants}
		}
	})
	return r.Path
}

// StepResult is one step's outcome in the task's result.
type StepResult struct {
	Tool        string          `json:"tool"`
	Status      int             `json:"status,omitempty"`
	Body        json.RawMessage `json:"body,omitempty"`
	ExternalRef string          `json:"external_ref,omitempty"`
	Replayed    bool            `json:"replayed,omitempty"`
	// Resolved: an operator resolved the step's effect as done
	// (agentctl resolve --done) when its outcome was unknown; its status
	// and body are what they gave, if anything, and the journal holds
	// their note.
	Resolved bool `json:"resolved,omitempty"`
}

// Work runs the task's steps in order and returns {"steps": [StepResult…]}.
// Each step goes through the ledger at "tool/<i>": steps finished by an
// earlier attempt are served from it, not performed again. A step's
// permanent failure fails the task finally; a transient one fails the
// attempt (the worker retries with backoff).
func (r *Runner) Work(ctx context.Context, task *agentledger.Task) (json.RawMessage, error) {
	p, err := parse(task.Payload)
	if err != nil {
		return nil, err
	}
	// Look every tool up first: an unknown tool fails before step 0 runs.
	ts := make([]tools.Tool, len(p.Steps))
	if err := p.each(func(i int, s Step) (err error) {
		if ts[i], err = r.tools.Get(s.Tool); err != nil {
			return err
		}
		if s.Compensate != nil {
			if _, err := r.tools.Get(s.Compensate.Tool); err != nil {
				return fmt.Errorf("compensation: %w", err)
			}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if err := p.checkCompensable(ts); err != nil {
		return nil, err
	}
	results := make([]any, 0, len(p.Steps))
	out := make([]StepResult, 0, len(p.Steps))
	for i, s := range p.Steps {
		args, err := resolve(s.Args, results)
		if err != nil {
			return nil, fmt.Errorf("step %d: %w", i, err)
		}
		undo, err := compensation(s, results)
		if err != nil {
			return nil, fmt.Errorf("step %d: %w", i, err)
		}
		res, err := r.path().Perform(ctx, &tools.Outgoing{Tool: ts[i],
			Call: tools.Call{Task: task, StepPath: stepPath(i), Args: args, Compensate: undo, Approval: s.Approve}})
		if err != nil {
			var failed *ledger.FailedError
			if errors.As(err, &failed) {
				return nil, agentledger.Permanent(fmt.Errorf("step %d (%s) failed: %s", i, s.Tool, failed.Message))
			}
			if errors.Is(err, agentledger.ErrKeyReuse) { // retrying cannot change the recorded request
				return nil, agentledger.Permanent(fmt.Errorf("step %d (%s): the call differs from the one recorded for it; "+
					"re-run the task as a new intent: %w", i, s.Tool, err))
			}
			return nil, fmt.Errorf("step %d (%s): %w", i, s.Tool, err)
		}
		view, err := resultView(res)
		if err != nil {
			return nil, err
		}
		results = append(results, view)
		out = append(out, StepResult{Tool: s.Tool, Status: res.Status, Body: res.Body, ExternalRef: res.ExternalRef,
			Replayed: res.Replayed, Resolved: res.Resolved})
	}
	return json.Marshal(struct {
		Steps []StepResult `json:"steps"`
	}{out})
}

// resultView is what references see of a result.
func resultView(res ledger.Result) (any, error) {
	v, err := refs.View(res)
	if err != nil {
		return nil, fmt.Errorf("steps: %w", err)
	}
	return v, nil
}
