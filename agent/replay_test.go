package agent_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/agent"
	"github.com/agentledger/agentledger/agentledgertest/fakeopenai"
	"github.com/agentledger/agentledger/ledger"
)

// script is a two-step conversation: one tool call, then the answer.
func script() []fakeopenai.Reply {
	return []fakeopenai.Reply{
		{ToolCalls: []fakeopenai.ToolCall{call("call_1", "count", `{"x":41}`)}, PromptTokens: 5, CompletionTokens: 1},
		{Content: "the answer is 42", PromptTokens: 9, CompletionTokens: 4},
	}
}

const payload = `{"prompt": "what follows 41?", "tools": ["count"]}`

// Drill 6: the worker dies after a completion was recorded but before its
// tool call landed. The next attempt does not ask the model again for that
// step, calls the tool with the same key, and ends with the result an
// uninterrupted run has.
func TestCrashAfterCompletionBeforeTools(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	control := newEnv(t, nil, script()...)
	want, err := control.agent.Work(ctx, control.submit(payload))
	if err != nil {
		t.Fatal(err)
	}

	e := newEnv(t, nil, script()...)
	e.tool.fail = func(n int64) error {
		if n == 1 {
			return errors.New("connection reset by peer") // the crash, as the first attempt saw it
		}
		return nil
	}
	first := e.submit(payload)
	_, err = e.agent.Work(ctx, first)
	var perm *agentledger.PermanentError
	if err == nil || errors.As(err, &perm) {
		t.Fatalf("first attempt: %v, want a transient error", err)
	}
	if e.fake.Calls() != 1 {
		t.Fatalf("model called %d times", e.fake.Calls())
	}
	// The completion is recorded; the failed tool call left nothing (a
	// keyed effect is recorded once it has an outcome, and performed again
	// with the same key until then).
	before := e.journal(first)
	if p := paths(before); !slices.Equal(p, []string{"llm/0"}) || before[0].State != ledger.StateCompleted {
		t.Fatalf("journal after the crash: %+v", before)
	}

	second := e.expireAndReclaim()
	if second.LeaseToken == first.LeaseToken {
		t.Fatal("the second attempt has the first one's token")
	}
	got, err := e.agent.Work(ctx, second)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("result %s, uninterrupted run %s", got, want)
	}
	if e.fake.Calls() != 2 { // llm/0 served from the ledger; only llm/1 asked
		t.Fatalf("model called %d times, want 2", e.fake.Calls())
	}
	after := e.journal(second)
	if p := paths(after); !slices.Equal(p, []string{"llm/0", "tool/0/call_1", "llm/1"}) ||
		after[0].Key != before[0].Key || after[0].Performed != 1 {
		t.Fatalf("journal after the retry: %+v", after)
	}
	// Both performances of the tool call carried the key now recorded for it.
	keys := e.tool.performedKeys()
	if len(keys) != 2 || keys[0] != keys[1] || keys[0] != after[1].Key {
		t.Fatalf("tool keys %v, recorded %s", keys, after[1].Key)
	}
}

// An operator's replay of a finished task serves every step from the
// ledger: no model call, no tool performance, the same result.
func TestReplayOfFinishedTask(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, nil, script()...)
	task := e.submit(payload)
	first, err := e.agent.Work(ctx, task)
	if err != nil {
		t.Fatal(err)
	}
	if a := answer(t, first); a.Answer != "the answer is 42" || a.Steps != 2 || a.Usage.TotalTokens != 19 {
		t.Fatalf("answer %+v", a)
	}
	calls, performed := e.fake.Calls(), e.tool.performed.Load()

	replayed := e.finishAndReplay(task, first)
	if replayed.Generation != task.Generation {
		t.Fatalf("generation %d → %d", task.Generation, replayed.Generation)
	}
	again, err := e.agent.Work(ctx, replayed)
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != string(first) || e.fake.Calls() != calls || e.tool.performed.Load() != performed {
		t.Fatalf("replay %s (first %s), model calls %d→%d, tool %d→%d",
			again, first, calls, e.fake.Calls(), performed, e.tool.performed.Load())
	}
}

// A replay under another model would mix two models' answers: the ledger
// refuses it (I4) and the task fails for an operator to re-run it.
func TestReplayWithAnotherModelIsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, nil, script()...)
	task := e.submit(payload)
	first, err := e.agent.Work(ctx, task)
	if err != nil {
		t.Fatal(err)
	}
	other := agent.New(e.config(func(c *agent.Config) { c.Model = "another-model" }), e.Ledger, e.reg)
	_, err = other.Work(ctx, e.finishAndReplay(task, first))
	var perm *agentledger.PermanentError
	if !errors.Is(err, agentledger.ErrKeyReuse) || !errors.As(err, &perm) || e.fake.Calls() != 2 {
		t.Fatalf("err %v, model called %d", err, e.fake.Calls())
	}
}
