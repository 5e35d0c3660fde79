package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/agent"
	"github.com/agentledger/agentledger/agentledgertest/fakeopenai"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/saga"
)

// A task's payload declares the compensation of a tool; when the task then
// fails for good, every completed call of that tool is undone, newest
// first, with the arguments the declaration draws from each call's result.
// The model never saw the compensation.
func TestToolCompensations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, nil, fakeopenai.Calls(call("c1", "count", `{"x":1}`)), fakeopenai.Calls(call("c2", "count", `{"x":5}`)),
		fakeopenai.Calls(call("c3", "count", `{"x":9}`))) // asked at the last step: not called
	task := e.submit(`{"prompt": "loop", "tools": ["count"], "max_steps": 3,
		"compensate": {"count": {"tool": "secret", "args": {"x": "${self.body.next}"}}}}`)
	_, err := e.agent.Work(ctx, task)
	var perm *agentledger.PermanentError
	if !errors.As(err, &perm) {
		t.Fatalf("want a permanent failure: %v", err)
	}
	st, err := e.Claims.Fail(ctx, claims.Failure{Lease: claims.LeaseOf(task), Error: err.Error(), Final: true})
	if err != nil || st != agentledger.StateCompensating {
		t.Fatalf("after the failure: %s %v", st, err)
	}
	for _, r := range e.fake.Requests() {
		for _, tl := range r.Tools {
			if tl.Function.Name != "count" {
				t.Fatalf("the model was offered %s", tl.Function.Name)
			}
		}
	}
	undo := e.claim()
	res, err := saga.Phase(e.agent, &saga.Undoer{Ledger: e.Ledger, Journal: e.Ledger, Tools: e.reg}).Work(ctx, undo)
	if err != nil {
		t.Fatal(err)
	}
	var r struct{ Compensations []saga.Result }
	json.Unmarshal(res, &r)
	if len(r.Compensations) != 2 || r.Compensations[0].Undoes != "tool/1/c2" || r.Compensations[1].Undoes != "tool/0/c1" ||
		!strings.Contains(string(r.Compensations[0].Body), `"x":6`) || !strings.Contains(string(r.Compensations[1].Body), `"x":2`) {
		t.Fatalf("compensations %s", res)
	}
	var undone int
	for _, en := range e.journal(undo) {
		if strings.HasPrefix(en.StepPath, "compensate/") && en.State == ledger.StateCompleted {
			undone++
		}
	}
	if undone != 2 || e.fake.Calls() != 3 {
		t.Fatalf("%d compensations journaled, model called %d times (the compensation asks it nothing)", undone, e.fake.Calls())
	}
}

// A compensation for a tool the task may not use is refused before the
// model is asked anything.
func TestCompensationOfAnUnlistedTool(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	task := e.submit(`{"prompt": "p", "tools": ["count"], "compensate": {"secret": {"tool": "count"}}}`)
	_, err := e.agent.Work(context.Background(), task)
	if err == nil || !strings.Contains(err.Error(), `compensate.secret: "secret" is not one of the task's tools`) || e.fake.Calls() != 0 {
		t.Fatalf("got %v after %d model calls", err, e.fake.Calls())
	}
}

// The worker declares a tool's compensation once (agentd's
// [[compensation]] tables); a task that may use the tool has its calls
// undone by it, and a task's own declaration stands instead.
func TestWorkerDeclaredCompensation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, func(c *agent.Config) {
		c.Compensations = map[string]saga.Compensation{"count": {Tool: "secret", Args: json.RawMessage(`{"x": "${self.body.x}"}`)}}
	}, fakeopenai.Calls(call("c1", "count", `{"x":4}`)), fakeopenai.Calls(call("c2", "count", `{"x":8}`)))
	task := e.submit(`{"prompt": "loop", "tools": ["count"], "max_steps": 2}`)
	_, err := e.agent.Work(ctx, task)
	if _, ferr := e.Claims.Fail(ctx, claims.Failure{Lease: claims.LeaseOf(task), Error: err.Error(), Final: true}); ferr != nil {
		t.Fatal(ferr)
	}
	undo := e.claim()
	res, err := saga.Phase(e.agent, &saga.Undoer{Ledger: e.Ledger, Journal: e.Ledger, Tools: e.reg}).Work(ctx, undo)
	if err != nil || !strings.Contains(string(res), `"undoes":"tool/0/c1"`) || !strings.Contains(string(res), `"x":4`) {
		t.Fatalf("compensation %s %v", res, err)
	}
}

// A worker-declared compensation by a tool the worker lacks fails the task
// before the model is asked, naming where it was declared.
func TestWorkerDeclaredCompensationOfAnUnknownTool(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *agent.Config) {
		c.Compensations = map[string]saga.Compensation{"count": {Tool: "refund"}}
	})
	task := e.submit(`{"prompt": "p", "tools": ["count"]}`)
	_, err := e.agent.Work(context.Background(), task)
	if err == nil || !strings.Contains(err.Error(), "the worker's compensation of count") || !strings.Contains(err.Error(), `"refund"`) || e.fake.Calls() != 0 {
		t.Fatalf("got %v after %d model calls", err, e.fake.Calls())
	}
}
