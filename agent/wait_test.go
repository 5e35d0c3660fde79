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
	"github.com/agentledger/agentledger/tools"
	"github.com/agentledger/agentledger/waits"
)

// An agent waits for a signal as it calls any tool: the task parks with no
// lease, and once the signal comes the model is handed its payload as the
// tool's result and goes on; the completion before the wait is not asked
// again (the ledger serves it).
func TestAgentWaitsForASignal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, nil,
		fakeopenai.Reply{Content: "I wait for the refund's approval.", ToolCalls: []fakeopenai.ToolCall{
			call("c1", waits.ToolSignal, `{"signal":"refund.approved","key":"order-12","timeout":"1h"}`)}},
		fakeopenai.Text("The refund of 40 EUR was approved by finance."))
	store := waits.NewStore(e.DB)
	e.reg = tools.NewRegistry(append(waits.Tools(store), e.tool)...)
	e.agent = agent.New(e.config(nil), e.Ledger, e.reg)
	task := e.submit(`{"prompt": "refund order 12 once finance approves", "tools": ["wait_for_signal"]}`)

	_, err := e.agent.Work(ctx, task)
	var wait *agentledger.DeferredError
	if !errors.As(err, &wait) || !wait.Park || !strings.Contains(wait.Reason, "waiting for signal refund.approved key order-12") {
		t.Fatalf("the wait: %v, want the task parked waiting for the signal", err)
	}
	sent, err := store.Send(ctx, waits.SignalParams{Tenant: task.Tenant, Name: "refund.approved", Key: "order-12",
		Payload: json.RawMessage(`{"by":"finance","amount":40}`), SentBy: "test"})
	if err != nil || sent.Woke == nil {
		t.Fatalf("send: %+v %v", sent, err)
	}
	res, err := e.agent.Work(ctx, e.expireAndReclaim())
	if err != nil {
		t.Fatalf("after the signal: %v", err)
	}
	if got := answer(t, res).Answer; got != "The refund of 40 EUR was approved by finance." {
		t.Fatalf("answer %q", got)
	}
	reqs := e.fake.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d completions, want 2: the one before the wait is served from the ledger", len(reqs))
	}
	last := reqs[1].Messages
	if told := last[len(last)-1].Content; !strings.Contains(told, `"by": "finance"`) && !strings.Contains(told, `"by":"finance"`) {
		t.Fatalf("the model was told %q, want the signal's payload", told)
	}
}
