package agent_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/agent"
	"github.com/agentledger/agentledger/agentledgertest/fakeopenai"
	"github.com/agentledger/agentledger/approvals"
	"github.com/agentledger/agentledger/tools"
)

// The model proposes, a person disposes: an agent's gated tool call waits
// for a decision (the task deferred, the model's stated reason in the
// request); denied, the call is not performed, the model is told who
// denied it and why, and the conversation goes on to an answer.
func TestDeniedToolCallTheModelRecoversFrom(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, nil,
		fakeopenai.Reply{Content: "Counting fixes the ledger.", ToolCalls: []fakeopenai.ToolCall{call("c1", "count", `{"x":1}`)}},
		fakeopenai.Text("I was not allowed to count, so I stop here."))
	store := approvals.NewStore(e.DB)
	gate := &approvals.Gate{Store: store}
	e.agent = agent.New(e.config(func(c *agent.Config) {
		c.Path = &tools.Path{Ledger: e.Ledger, Tools: e.reg, Interceptors: []tools.Interceptor{gate.Intercept}}
	}), e.Ledger, e.reg)
	task := e.submit(`{"prompt": "count once", "tools": ["count"], "approve": {"count": {"approvers": ["U1"]}}}`)

	_, err := e.agent.Work(ctx, task)
	var wait *agentledger.DeferredError
	if !errors.As(err, &wait) || !strings.Contains(wait.Reason, "waiting for approval") {
		t.Fatalf("the gated call: %v, want the task to wait for approval", err)
	}
	pending, err := store.List(ctx, approvals.ListParams{TaskID: task.ID})
	if err != nil || len(pending) != 1 || pending[0].Reason != "Counting fixes the ledger." || pending[0].Tool != "count" {
		t.Fatalf("requests %+v %v", pending, err)
	}
	if _, won, err := store.Decide(ctx, approvals.Decision{ID: pending[0].ID, By: "U1", Via: "slack", Reason: "not today"}); err != nil || !won {
		t.Fatal(won, err)
	}

	res, err := e.agent.Work(ctx, e.expireAndReclaim())
	if err != nil {
		t.Fatalf("after the denial: %v, want the conversation to go on", err)
	}
	if got := answer(t, res).Answer; got != "I was not allowed to count, so I stop here." {
		t.Fatalf("answer %q", got)
	}
	if e.tool.performed.Load() != 0 {
		t.Fatal("the denied call was performed")
	}
	reqs := e.fake.Requests()
	last := reqs[len(reqs)-1].Messages
	if told := last[len(last)-1].Content; !strings.Contains(told, "denied by U1 (slack): not today") {
		t.Fatalf("the model was told %q", told)
	}
}

// An unknown tool in "approve" is a bad payload.
func TestApproveNamesAListedTool(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	_, err := e.agent.Work(context.Background(), e.submit(`{"prompt": "p", "tools": ["count"], "approve": {"secret": true}}`))
	if err == nil || !strings.Contains(err.Error(), `approve: "secret" is not among tools`) {
		t.Fatalf("%v", err)
	}
}
