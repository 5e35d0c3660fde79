package agent_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/agentledger/agentledger/agent"
	"github.com/agentledger/agentledger/agentledgertest/fakeopenai"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/tools"
)

// An agent's completions and tool calls both take the effect path: an
// interceptor sees each, with its class, and tells a replay the ledger
// serves (nothing asked of the model or the tool again) from a first run.
func TestInterceptorSeesCompletionsAndToolCalls(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, nil, fakeopenai.Calls(call("c1", "count", `{"x":1}`)), fakeopenai.Text("done"))
	var seen []string
	note := func(ctx context.Context, o *tools.Outgoing, next tools.Next) (ledger.Result, error) {
		recorded, err := o.Recorded(ctx)
		if err != nil {
			return ledger.Result{}, err
		}
		seen = append(seen, fmt.Sprintf("%s %s %s recorded=%t", o.Name(), o.StepPath, o.Effect.Class, recorded))
		return next(ctx, o)
	}
	e.agent = agent.New(e.config(func(c *agent.Config) {
		c.Path = &tools.Path{Ledger: e.Ledger, Tools: e.reg, Interceptors: []tools.Interceptor{note}}
	}), e.Ledger, e.reg)
	task := e.submit(`{"prompt": "count once", "tools": ["count"]}`)
	res, err := e.agent.Work(ctx, task)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.agent.Work(ctx, e.finishAndReplay(task, res)); err != nil {
		t.Fatal(err)
	}
	want := []string{"llm.chat llm/0 pure recorded=false", "count tool/0/c1 keyed recorded=false", "llm.chat llm/1 pure recorded=false",
		"llm.chat llm/0 pure recorded=true", "count tool/0/c1 keyed recorded=true", "llm.chat llm/1 pure recorded=true"}
	if !slices.Equal(seen, want) {
		t.Fatalf("seen %q\nwant %q", seen, want)
	}
	if e.fake.Calls() != 2 || e.tool.performed.Load() != 1 {
		t.Fatalf("%d model calls, %d tool calls: want 2 and 1", e.fake.Calls(), e.tool.performed.Load())
	}
}
