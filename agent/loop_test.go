package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/agent"
	"github.com/agentledger/agentledger/agentledgertest/fakeopenai"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/logbuf"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/registry"
)

func TestThreeStepConversation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil,
		fakeopenai.Reply{ToolCalls: []fakeopenai.ToolCall{call("call_a", "count", `{"x":1}`)}, PromptTokens: 10, CompletionTokens: 1},
		fakeopenai.Reply{ToolCalls: []fakeopenai.ToolCall{call("call_b", "count", `{"x":2}`)}, PromptTokens: 20, CompletionTokens: 2},
		fakeopenai.Reply{Content: "x is 3", PromptTokens: 30, CompletionTokens: 3})
	task := e.submit(`{"prompt": "count to 3", "system": "be brief", "tools": ["count"]}`)

	raw, err := e.agent.Work(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	got := answer(t, raw)
	want := agent.Answer{Answer: "x is 3", Steps: 3, FinishReason: "stop",
		Usage: agent.Usage{PromptTokens: 60, CompletionTokens: 6, TotalTokens: 66}}
	if got != want {
		t.Fatalf("answer %+v, want %+v", got, want)
	}

	j := e.journal(task)
	if p := paths(j); !slices.Equal(p, []string{"llm/0", "tool/0/call_a", "llm/1", "tool/1/call_b", "llm/2"}) {
		t.Fatalf("journal %v", p)
	}
	for _, en := range j {
		if en.State != ledger.StateCompleted || en.Performed != 1 {
			t.Errorf("%s: %s, performed %d", en.StepPath, en.State, en.Performed)
		}
		if strings.HasPrefix(en.StepPath, "llm/") && (en.Operation != agent.Operation || en.Class != ledger.Pure) {
			t.Errorf("%s: operation %s class %s", en.StepPath, en.Operation, en.Class)
		}
	}
	if e.tool.performed.Load() != 2 || e.fake.Calls() != 3 {
		t.Fatalf("tool performed %d, model called %d", e.tool.performed.Load(), e.fake.Calls())
	}

	// The model saw the whole conversation, the tool it may use, and the key.
	reqs := e.fake.Requests()
	last := reqs[2]
	roles := make([]string, len(last.Messages))
	for i, m := range last.Messages {
		roles[i] = m.Role
	}
	if !slices.Equal(roles, []string{"system", "user", "assistant", "tool", "assistant", "tool"}) {
		t.Fatalf("roles %v", roles)
	}
	if m := last.Messages[2]; len(m.ToolCalls) != 1 || m.ToolCalls[0] != call("call_a", "count", `{"x":1}`) {
		t.Fatalf("assistant message %+v", m)
	}
	if m := last.Messages[3]; m.ToolCallID != "call_a" ||
		m.Content != `{"status":200,"body":{"x":1,"html":"<b>","next":2,"tiny":0.0000001}}` {
		t.Fatalf("tool message %+v", m)
	}
	if m := last.Messages[5]; m.ToolCallID != "call_b" || !strings.Contains(m.Content, `"next":3`) {
		t.Fatalf("tool message %+v", m)
	}
	for _, r := range reqs {
		if !r.Authorized || r.Model != "fake-model" || len(r.Tools) != 1 || r.Tools[0].Function.Name != "count" ||
			!strings.Contains(string(r.Tools[0].Function.Parameters), `"required":["x"]`) {
			t.Fatalf("request %+v", r)
		}
	}
}

// A tool the task did not list, a tool that does not exist, arguments
// that are not JSON and arguments with a key given twice are answered to
// the model, not performed.
func TestToolsOutsideTheTaskAreRefusedToTheModel(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil,
		fakeopenai.Calls(call("c1", "secret", `{"x":1}`), call("c2", "nope", `{}`), call("c3", "count", `{"x":`),
			call("c4", "count", `{"y":1}`), call("c5", "count", `{"x":1,"x":2}`)),
		fakeopenai.Text("I could not"))
	task := e.submit(`{"prompt": "try", "tools": ["count"]}`)
	raw, err := e.agent.Work(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	if a := answer(t, raw); a.Answer != "I could not" || a.Steps != 2 {
		t.Fatalf("answer %+v", a)
	}
	if n := e.tool.performed.Load(); n != 0 {
		t.Fatalf("performed %d", n)
	}
	msgs := e.fake.Requests()[1].Messages[2:]
	if len(msgs) != 5 {
		t.Fatalf("tool messages %+v", msgs)
	}
	want := []string{
		`{"error":"tool \"secret\" is not available to this task (it may use: count)"}`,
		`{"error":"tool \"nope\" is not available to this task (it may use: count)"}`,
		`{"error":"the arguments of count are not valid JSON"}`,
		`{"error":"count at tool/0/c4: want {\"x\": <integer>}"}`,
		`{"error":"the arguments of count are not valid: duplicate object key \"x\""}`,
	}
	for i, m := range msgs {
		if m.Role != "tool" || m.Content != want[i] {
			t.Errorf("tool message %d: %+v, want %s", i, m, want[i])
		}
	}
	if p := paths(e.journal(task)); !slices.Equal(p, []string{"llm/0", "llm/1"}) {
		t.Fatalf("journal %v", p)
	}
}

// A task that lists no tools offers none.
func TestNoToolsUnlessListed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, fakeopenai.Calls(call("c1", "count", `{"x":1}`)), fakeopenai.Text("ok"))
	task := e.submit(`{"prompt": "hi"}`)
	if _, err := e.agent.Work(context.Background(), task); err != nil {
		t.Fatal(err)
	}
	reqs := e.fake.Requests()
	if len(reqs[0].Tools) != 0 || e.tool.performed.Load() != 0 ||
		!strings.Contains(reqs[1].Messages[2].Content, "it may use: no tools") {
		t.Fatalf("tools %+v, performed %d, messages %+v", reqs[0].Tools, e.tool.performed.Load(), reqs[1].Messages)
	}
}

// A permanent tool failure is the model's to handle, and it is served again
// from the ledger on replay.
func TestPermanentToolFailureGoesToTheModel(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, fakeopenai.Calls(call("c1", "count", `{"x":1}`)), fakeopenai.Text("it failed"))
	e.tool.fail = func(int64) error { return agentledger.Permanent(errors.New("insufficient funds")) }
	task := e.submit(`{"prompt": "pay", "tools": ["count"]}`)
	raw, err := e.agent.Work(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	if m := e.fake.Requests()[1].Messages[2]; m.Content != `{"error":"insufficient funds"}` {
		t.Fatalf("tool message %+v", m)
	}
	if j := e.journal(task); j[1].State != ledger.StateFailed {
		t.Fatalf("journal %+v", j)
	}

	again, err := e.agent.Work(context.Background(), e.finishAndReplay(task, raw))
	if err != nil || string(again) != string(raw) || e.fake.Calls() != 2 || e.tool.performed.Load() != 1 {
		t.Fatalf("replay: %s %v, model called %d, tool performed %d", again, err, e.fake.Calls(), e.tool.performed.Load())
	}
}

// A task out of steps fails for good; the calls the model asks for at its
// last step are not made, as no completion could read what they return.
func TestMaxStepsWithoutAnswer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, fakeopenai.Calls(call("c1", "count", `{"x":1}`)), fakeopenai.Calls(call("c2", "count", `{"x":2}`)))
	task := e.submit(`{"prompt": "loop", "tools": ["count"], "max_steps": 2}`)
	_, err := e.agent.Work(context.Background(), task)
	var perm *agentledger.PermanentError
	if !errors.As(err, &perm) || !strings.Contains(err.Error(), `no final answer within max_steps=2: the model asked for "count" at its last step; not called`) {
		t.Fatalf("err %v", err)
	}
	if e.fake.Calls() != 2 || e.tool.performed.Load() != 1 {
		t.Fatalf("model called %d, tool performed %d", e.fake.Calls(), e.tool.performed.Load())
	}
}

// An attempt that lost its lease performs nothing: not even a completion.
func TestStaleAttemptAsksNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	zombie := e.submit(`{"prompt": "hi"}`)
	e.expireAndReclaim()
	_, err := e.agent.Work(context.Background(), zombie)
	if !errors.Is(err, agentledger.ErrLeaseLost) || e.fake.Calls() != 0 {
		t.Fatalf("err %v, model called %d", err, e.fake.Calls())
	}
}

// A call whose outcome was unknown and that an operator resolved as done,
// with no result, is answered to the model as performed: a status of 0
// would read as a failure, and the model could make the call again.
func TestAResolvedCallReadsAsPerformed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, nil, fakeopenai.Calls(call("c1", "count", `{"x":1}`)), fakeopenai.Text("done"))
	e.tool.class = ledger.Unsafe
	e.tool.fail = func(int64) error { return errors.New("connection reset after the request was sent") }
	task := e.submit(`{"prompt": "charge", "tools": ["count"]}`)
	if _, err := e.agent.Work(ctx, task); !errors.Is(err, agentledger.ErrNeedsAttention) {
		t.Fatalf("an unsafe call with no answer: %v, want it to need attention", err)
	}
	e.fail(task, agentledger.ErrNeedsAttention)
	j := e.journal(task)
	if len(j) != 2 || j[1].State != ledger.StateUnknown {
		t.Fatalf("journal %+v", j)
	}
	if err := e.Ledger.Resolve(ctx, task.Tenant, "test.count", j[1].Key, ledger.Resolution{Done: true, Note: "the charge is there"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Operator.Replay(ctx, "", task.ID); err != nil {
		t.Fatal(err)
	}
	raw, err := e.agent.Work(ctx, e.claim())
	if err != nil || answer(t, raw).Answer != "done" || e.tool.performed.Load() != 1 {
		t.Fatalf("after the resolve: %s %v, performed %d", raw, err, e.tool.performed.Load())
	}
	if m := e.fake.Requests()[1].Messages[2]; m.Content != `{"performed":true,"result":null}` {
		t.Fatalf("the tool message %q", m.Content)
	}
}

// A result with no HTTP status (an MCP tool's, a Go tool's) reads as
// performed to the model of a task submitted since the second wording
// (registry.CapAgent2, which the door adds to every agent task's needs).
// A task submitted before keeps {"status":0,…}, the wording its recorded
// completions were asked with, so that its replay is served.
func TestAResultWithoutStatusReadsAsPerformed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, nil, fakeopenai.Calls(call("c1", "count", `{"x":1}`)), fakeopenai.Text("done"),
		fakeopenai.Calls(call("c2", "count", `{"x":2}`)), fakeopenai.Text("done"))
	e.tool.noStatus = true
	for i, c := range []struct {
		needs []string
		want  string
	}{
		{nil, `{"status":0,"body":{"x":1,"html":"<b>","next":2,"tiny":0.0000001}}`},
		{[]string{registry.CapModel, registry.CapAgent2}, `{"performed":true,"result":{"x":2,"html":"<b>","next":3,"tiny":0.0000001}}`},
	} {
		e.Enqueue(claims.EnqueueParams{Kind: agent.Kind, Needs: c.needs, Payload: json.RawMessage(`{"prompt": "count", "tools": ["count"]}`)})
		task := e.claim()
		raw, err := e.agent.Work(ctx, task)
		if err != nil || answer(t, raw).Answer != "done" {
			t.Fatalf("task %d: %s %v", i, raw, err)
		}
		if m := e.fake.Requests()[2*i+1].Messages[2]; m.Content != c.want {
			t.Fatalf("task %d (needs %q): the tool message %s, want %s", i, c.needs, m.Content, c.want)
		}
		again, err := e.agent.Work(ctx, e.finishAndReplay(task, raw))
		if err != nil || string(again) != string(raw) || e.fake.Calls() != 2*(i+1) {
			t.Fatalf("task %d replayed: %s %v, model called %d", i, again, err, e.fake.Calls())
		}
	}
}

// A call the tool refuses is answered to the model of a task of the
// second wording without the operator's names for it (the tool's
// registered name, the journal's step): the message answers that call. A
// task submitted before reads it whole, as its completions recorded.
func TestARefusedCallReadsWithoutTheOperatorsNames(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, nil, fakeopenai.Calls(call("c1", "count", `{"x":"one"}`)), fakeopenai.Text("done"),
		fakeopenai.Calls(call("c2", "count", `{"x":"two"}`)), fakeopenai.Text("done"))
	for i, c := range []struct {
		needs []string
		want  string
	}{
		{nil, `{"error":"count at tool/0/c1: want {\"x\": <integer>}"}`},
		{[]string{registry.CapModel, registry.CapAgent2}, `{"error":"want {\"x\": <integer>}"}`},
	} {
		e.Enqueue(claims.EnqueueParams{Kind: agent.Kind, Needs: c.needs, Payload: json.RawMessage(`{"prompt": "count", "tools": ["count"]}`)})
		if raw, err := e.agent.Work(ctx, e.claim()); err != nil || answer(t, raw).Answer != "done" {
			t.Fatalf("task %d: %s %v", i, raw, err)
		}
		if m := e.fake.Requests()[2*i+1].Messages[2]; m.Content != c.want {
			t.Fatalf("task %d (needs %q): the tool message %s, want %s", i, c.needs, m.Content, c.want)
		}
	}
}

// A call the model asks for and that is not performed is logged, with the
// reason the model is told: an operator reads no conversation.
func TestARefusedCallIsLogged(t *testing.T) {
	t.Parallel()
	logs := &logbuf.Buffer{}
	e := newEnv(t, func(c *agent.Config) { c.Logger = slog.New(slog.NewTextHandler(logs, nil)) },
		fakeopenai.Calls(call("c1", "secret", `{"x":1}`)), fakeopenai.Calls(call("c2", "count", `{"x":"one"}`)), fakeopenai.Text("done"))
	task := e.submit(`{"prompt": "count", "tools": ["count"]}`)
	if raw, err := e.agent.Work(context.Background(), task); err != nil || answer(t, raw).Answer != "done" {
		t.Fatalf("%s %v", raw, err)
	}
	got := logs.String()
	for _, want := range []string{
		fmt.Sprintf(`msg="agent: a tool call the model asked for was refused; the model is told why" task=%d step=0 tool=secret reason="a tool this task may not use"`, task.ID),
		fmt.Sprintf(`task=%d step=1 tool=count reason="count at tool/1/c2: want {\"x\": <integer>}"`, task.ID),
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the log lacks %s:\n%s", want, got)
		}
	}
}
