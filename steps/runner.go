package steps

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/tools"
)

// Runner runs steps tasks. It is a worker.Handler.
type Runner struct {
	ledger  tools.Doer
	journal Journal
	tools   *tools.Registry
	// Grants, when set, give each task's tenant grant, read at the start
	// of every attempt; every step is checked against it, on a replay too.
	Grants grants.Source
}

// Journal reads the effects of a task generation (*ledger.Ledger has it):
// the compensation phase finds there what completed.
type Journal interface {
	Journal(ctx context.Context, taskID int64, generation int32) ([]ledger.Entry, error)
	// Abandoned marks unknown a pending effect left by an earlier attempt.
	Abandoned(ctx context.Context, taskID int64, e ledger.Entry, why string) error
}

// New returns a Runner that runs tools from reg through l. A task that
// declares compensations needs l to be a Journal too (as *ledger.Ledger
// is): its compensation phase fails with a clear error otherwise.
func New(l tools.Doer, reg *tools.Registry) *Runner {
	j, _ := l.(Journal)
	return &Runner{ledger: l, journal: j, tools: reg}
}

// StepResult is one step's outcome in the task's result.
type StepResult struct {
	Tool        string          `json:"tool"`
	Status      int             `json:"status,omitempty"`
	Body        json.RawMessage `json:"body,omitempty"`
	ExternalRef string          `json:"external_ref,omitempty"`
	Replayed    bool            `json:"replayed,omitempty"`
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
	var grant *grants.Grant
	if r.Grants != nil {
		if grant, err = r.Grants.For(ctx, task.Tenant); err != nil {
			return nil, err
		}
	}
	if task.Compensation != "" {
		return r.compensate(ctx, task, p, grant)
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
		res, err := tools.Invoke(ctx, r.ledger, ts[i], tools.Call{Task: task, StepPath: stepPath(i), Args: args, Grant: grant,
			Compensable: s.Compensate != nil})
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
		out = append(out, StepResult{Tool: s.Tool, Status: res.Status, Body: res.Body, ExternalRef: res.ExternalRef, Replayed: res.Replayed})
	}
	return json.Marshal(struct {
		Steps []StepResult `json:"steps"`
	}{out})
}

// resultView is what references see of a result.
func resultView(res ledger.Result) (any, error) {
	m := map[string]any{"status": json.Number(fmt.Sprint(res.Status)), "external_ref": res.ExternalRef, "body": nil}
	if len(res.Body) > 0 {
		dec := json.NewDecoder(bytes.NewReader(res.Body))
		dec.UseNumber()
		var body any
		if err := dec.Decode(&body); err != nil {
			return nil, fmt.Errorf("steps: stored result is not JSON: %w", err)
		}
		m["body"] = body
	}
	return m, nil
}
