package agent_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/agent"
	"github.com/agentledger/agentledger/agentledgertest/fakeopenai"
	"github.com/agentledger/agentledger/grants"
)

// estimate is the agent's estimate of r's prompt as documented: the body
// sent without its limit (max_tokens, or a reasoning model's
// max_completion_tokens), in bytes over four, rounded up.
func estimate(t *testing.T, r fakeopenai.Request) int {
	t.Helper()
	field := fmt.Sprintf(`,"max_tokens":%d`, r.MaxTokens)
	if r.MaxTokens == 0 {
		field = fmt.Sprintf(`,"max_completion_tokens":%d`, r.MaxCompletionTokens)
	}
	if r.MaxTokens == 0 && r.MaxCompletionTokens == 0 || !bytes.Contains(r.Body, []byte(field)) {
		t.Fatalf("request without max_tokens: %s", r.Body)
	}
	return (len(r.Body) - len(field) + 3) / 4
}

// A completion of a budgeted task is told what the budget leaves it: the
// grant's max_tokens less what the task spent and the prompt's estimate,
// at most Config.MaxAnswerTokens. An unbudgeted task is told nothing.
func TestMaxTokensIsWhatTheBudgetLeaves(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, nil,
		fakeopenai.Reply{ToolCalls: []fakeopenai.ToolCall{call("c1", "count", `{"x":1}`)}, PromptTokens: 60, CompletionTokens: 10},
		fakeopenai.Reply{Content: "done", PromptTokens: 100, CompletionTokens: 5},
		fakeopenai.Text("capped"), fakeopenai.Text("operator"))
	store := e.checkGrants(nil)
	e.grant(store, "acme", grants.Grant{Tools: []string{"count"}, Models: []string{"*"}, MaxTokens: 1000})
	if _, err := e.agent.Work(ctx, e.submitAs("acme", `{"prompt": "count", "tools": ["count"]}`)); err != nil {
		t.Fatal(err)
	}
	reqs := e.fake.Requests()
	for i, spent := range []int{0, 70} {
		if want := 1000 - spent - estimate(t, reqs[i]); reqs[i].MaxTokens != want {
			t.Errorf("llm/%d: max_tokens %d, want 1000 - %d spent - %d estimated = %d", i, reqs[i].MaxTokens, spent, estimate(t, reqs[i]), want)
		}
	}

	e.grant(store, "acme", grants.Grant{Models: []string{"*"}, MaxTokens: 1_000_000})
	if _, err := e.agent.Work(ctx, e.submitAs("acme", `{"prompt": "hi"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.agent.Work(ctx, e.submit(`{"prompt": "hi"}`)); err != nil { // the operator's tenant: no bound
		t.Fatal(err)
	}
	if reqs := e.fake.Requests(); reqs[2].MaxTokens != agent.DefaultMaxAnswerTokens || reqs[3].MaxTokens != 0 {
		t.Fatalf("max_tokens %d under a large budget (want %d), %d without one (want none)",
			reqs[2].MaxTokens, agent.DefaultMaxAnswerTokens, reqs[3].MaxTokens)
	}
}

// The budget of 30 spent to 50: the endpoint is told to stop
// within what the budget leaves, and the task spends no more than that.
func TestBudgetIsNotOverspent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, fakeopenai.Reply{Content: "a long answer", PromptTokens: 10, CompletionTokens: 40})
	store := e.checkGrants(nil)
	e.grant(store, "acme", grants.Grant{Models: []string{"*"}, MaxTokens: 30})
	raw, err := e.agent.Work(context.Background(), e.submitAs("acme", `{"prompt": "hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	a := answer(t, raw)
	if a.Usage.TotalTokens > 30 {
		t.Fatalf("spent %d tokens of a budget of 30: %+v", a.Usage.TotalTokens, a)
	}
	r := e.fake.Requests()[0]
	if r.MaxTokens != 30-estimate(t, r) || a.Usage.CompletionTokens != r.MaxTokens || a.FinishReason != "length" {
		t.Fatalf("max_tokens %d (estimate %d), answer %+v", r.MaxTokens, estimate(t, r), a)
	}
}

// A prompt whose estimate alone takes what is left of the budget is
// refused before the endpoint is called, at the first completion or at a
// later one, and nothing is recorded for it.
func TestPromptBeyondTheBudgetIsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, nil, fakeopenai.Reply{ToolCalls: []fakeopenai.ToolCall{call("c1", "count", `{"x":1}`)}, PromptTokens: 60, CompletionTokens: 90})
	store := e.checkGrants(nil)
	e.grant(store, "acme", grants.Grant{Tools: []string{"count"}, Models: []string{"*"}, MaxTokens: 30})

	task := e.submitAs("acme", `{"prompt": "`+strings.Repeat("spend ", 30)+`"}`)
	_, err := e.agent.Work(ctx, task)
	denied(t, err, `tenant "acme" has no grant for a prompt of an estimated `)
	denied(t, err, " bytes / 4) with 30 of its 30 tokens per task left (this task spent 0) (agentctl tenant grant acme --max-tokens N)")
	if e.fake.Calls() != 0 || len(e.journal(task)) != 0 {
		t.Fatalf("%d model calls, journal %+v: want nothing sent or recorded", e.fake.Calls(), e.journal(task))
	}
	e.fail(task, err)

	// 150 of 200 spent by the first completion; the second prompt, with
	// the tool's result, is estimated at more than the 50 left.
	e.grant(store, "acme", grants.Grant{Tools: []string{"count"}, Models: []string{"*"}, MaxTokens: 200})
	task = e.submitAs("acme", `{"prompt": "count", "tools": ["count"]}`)
	_, err = e.agent.Work(ctx, task)
	denied(t, err, "with 50 of its 200 tokens per task left (this task spent 150)")
	if p := paths(e.journal(task)); e.fake.Calls() != 1 || !slices.Equal(p, []string{"llm/0", "tool/0/c1"}) {
		t.Fatalf("%d model calls, journal %v: want llm/1 neither sent nor recorded", e.fake.Calls(), p)
	}
}

// max_tokens is not part of a completion's ledger request, so a
// conversation recorded without one (as before limits were sent) or under
// another budget is served on replay; the estimate is not held against
// steps served from the ledger, which spend nothing.
func TestReplayUnderABudgetIsServed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, nil, script()...)
	store := e.checkGrants(nil)
	e.grant(store, "acme", grants.Grant{Tools: []string{"count"}, Models: []string{"*"}})
	task := e.submitAs("acme", payload)
	first, err := e.agent.Work(ctx, task)
	if err != nil {
		t.Fatal(err)
	}
	if r := e.fake.Requests(); r[0].MaxTokens != 0 || r[1].MaxTokens != 0 {
		t.Fatalf("max_tokens %d, %d sent without a budget", r[0].MaxTokens, r[1].MaxTokens)
	}
	// Under a budget, the first run would have sent max_tokens; the
	// replay is served all the same. Under 25, llm/0's prompt alone is
	// estimated at more than the budget: served too, as it spends nothing.
	for _, budget := range []int64{1000, 25} {
		e.grant(store, "acme", grants.Grant{Tools: []string{"count"}, Models: []string{"*"}, MaxTokens: budget})
		task = e.finishAndReplay(task, first)
		again, err := e.agent.Work(ctx, task)
		if err != nil || string(again) != string(first) || e.fake.Calls() != 2 || e.tool.performed.Load() != 1 {
			t.Fatalf("replay under %d: %s %v (first %s), model called %d, tool performed %d",
				budget, again, err, first, e.fake.Calls(), e.tool.performed.Load())
		}
	}
	// A budget already spent is refused on replay, as before.
	e.grant(store, "acme", grants.Grant{Tools: []string{"count"}, Models: []string{"*"}, MaxTokens: 6})
	_, err = e.agent.Work(ctx, e.finishAndReplay(task, first))
	denied(t, err, "more than 6 tokens per task (this task spent 6)")
}

// OpenAI's reasoning models refuse max_tokens (go-openai refuses to send
// it): their limit goes as max_completion_tokens, so a budget binds them
// too instead of failing every task.
func TestReasoningModelBudgetIsMaxCompletionTokens(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, fakeopenai.Reply{Content: "a long answer", PromptTokens: 10, CompletionTokens: 40})
	store := e.checkGrants(nil)
	e.grant(store, "acme", grants.Grant{Models: []string{"o3-mini"}, MaxTokens: 30})
	raw, err := e.agent.Work(context.Background(), e.submitAs("acme", `{"prompt": "hi", "model": "o3-mini"}`))
	if err != nil {
		t.Fatal(err)
	}
	r := e.fake.Requests()[0]
	if r.MaxTokens != 0 || r.MaxCompletionTokens != 30-estimate(t, r) {
		t.Fatalf("max_tokens %d, max_completion_tokens %d, want 0 and %d", r.MaxTokens, r.MaxCompletionTokens, 30-estimate(t, r))
	}
	if a := answer(t, raw); a.Usage.TotalTokens > 30 {
		t.Fatalf("spent %d tokens of a budget of 30: %+v", a.Usage.TotalTokens, a)
	}
}
