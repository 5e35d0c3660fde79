package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/agent"
	"github.com/agentledger/agentledger/ledger"
)

// These tests serve the loop answers shaped as OpenAI, Azure OpenAI, vLLM,
// Ollama, llama.cpp's server and LiteLLM publish them (testdata/responses),
// run a real task through it, and check that each ends in a clear state
// with every completion journaled once: a replay of the task ends the same
// way from the journal, without asking the endpoint again.

// newRawEnv is a world whose agent asks a rawModel serving script.
func newRawEnv(t *testing.T, tweak func(*agent.Config), script ...canned) (*env, *rawModel) {
	e := newEnv(t, nil)
	m := newRawModel(t, script...)
	m.use(e, tweak)
	return e, m
}

// replayed has an operator replay task, whose run ended with raw or err,
// and checks that the replay ends the same way from the journal alone, and
// that every entry of the journal was performed once.
func replayed(e *env, m *rawModel, task *agentledger.Task, raw json.RawMessage, err error) {
	t := e.T
	t.Helper()
	ctx := context.Background()
	calls := m.calls()
	var again *agentledger.Task
	if err == nil {
		again = e.finishAndReplay(task, raw)
	} else {
		e.fail(task, err)
		if _, rerr := e.Operator.Replay(ctx, "", task.ID); rerr != nil {
			t.Fatal(rerr)
		}
		again = e.claim()
	}
	raw2, err2 := e.agent.Work(ctx, again)
	if string(raw2) != string(raw) || fmt.Sprint(err2) != fmt.Sprint(err) {
		t.Fatalf("replay: %s %v, first run %s %v", raw2, err2, raw, err)
	}
	if m.calls() != calls {
		t.Fatalf("the replay asked the model %d more times", m.calls()-calls)
	}
	for _, en := range e.journal(again) {
		if en.Performed != 1 {
			t.Errorf("%s performed %d times", en.StepPath, en.Performed)
		}
	}
}

// wantPermanent fails t unless err is a permanent failure saying want.
func wantPermanent(t *testing.T, err error, want string) {
	t.Helper()
	var perm *agentledger.PermanentError
	if !errors.As(err, &perm) || !strings.Contains(err.Error(), want) {
		t.Fatalf("err %v, want a permanent failure saying %q", err, want)
	}
}

// OpenAI's parallel tool calls: several calls in one message whose content
// is null. Each is performed once, answered in order, and the model then
// answers.
func TestOpenAIParallelToolCalls(t *testing.T) {
	t.Parallel()
	e, m := newRawEnv(t, nil, ok("openai_parallel_tool_calls.json"), ok("openai_text.json"))
	task := e.submit(`{"prompt": "count twice", "tools": ["count"]}`)
	raw, err := e.agent.Work(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	want := agent.Answer{Answer: "x is 3", Steps: 2, FinishReason: "stop",
		Usage: agent.Usage{PromptTokens: 222, CompletionTokens: 50, TotalTokens: 272}}
	if got := answer(t, raw); got != want {
		t.Fatalf("answer %+v, want %+v", got, want)
	}
	if p := paths(e.journal(task)); !slices.Equal(p, []string{"llm/0", "tool/0/call_7Ha2LwzE", "tool/0/call_9Qb4KpRt", "llm/1"}) {
		t.Fatalf("journal %v", p)
	}
	if n := e.tool.performed.Load(); n != 2 {
		t.Fatalf("tool performed %d times", n)
	}
	msgs := m.requests()[1].body.Messages
	if len(msgs) != 4 || msgs[1].Role != "assistant" || len(msgs[1].ToolCalls) != 2 ||
		(msgs[1].Content != nil && *msgs[1].Content != "") ||
		msgs[2].ToolCallID != "call_7Ha2LwzE" || !strings.Contains(*msgs[2].Content, `"next":2`) ||
		msgs[3].ToolCallID != "call_9Qb4KpRt" || !strings.Contains(*msgs[3].Content, `"next":3`) {
		t.Fatalf("second request's messages %+v", msgs)
	}
	replayed(e, m, task, raw, err)
}

// OpenAI's refusal: content null, the reason in "refusal". The task fails
// with it rather than succeeding with an empty answer.
func TestOpenAIRefusalFailsTheTask(t *testing.T) {
	t.Parallel()
	e, m := newRawEnv(t, nil, ok("openai_refusal.json"))
	task := e.submit(`{"prompt": "something it will not do"}`)
	raw, err := e.agent.Work(context.Background(), task)
	wantPermanent(t, err, "llm/0: the model refused: I'm sorry, I cannot assist with that request.")
	if j := e.journal(task); len(j) != 1 || j[0].State != ledger.StateCompleted {
		t.Fatalf("journal %+v", j)
	}
	replayed(e, m, task, raw, err)
}

// finish_reason "length": the answer was cut at the token limit. The task
// succeeds with what came, and says so in its finish_reason.
func TestOpenAILengthEndsWithTheCutAnswer(t *testing.T) {
	t.Parallel()
	e, m := newRawEnv(t, nil, ok("openai_length.json"))
	task := e.submit(`{"prompt": "count to 100"}`)
	raw, err := e.agent.Work(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	if a := answer(t, raw); a.Answer != "Counting from one: 1, 2, 3, 4," || a.FinishReason != "length" || a.Steps != 1 {
		t.Fatalf("answer %+v", a)
	}
	replayed(e, m, task, raw, err)
}

// vLLM's tool call whose arguments are not JSON (cut short): the model is
// told, and the tool is not performed.
func TestVLLMInvalidToolArgumentsGoBackToTheModel(t *testing.T) {
	t.Parallel()
	e, m := newRawEnv(t, nil, ok("vllm_tool_call_invalid_arguments.json"), ok("vllm_text.json"))
	task := e.submit(`{"prompt": "count", "tools": ["count"]}`)
	raw, err := e.agent.Work(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	if a := answer(t, raw); a.Answer != "I could not call count: my arguments were cut short." || a.Steps != 2 {
		t.Fatalf("answer %+v", a)
	}
	if p := paths(e.journal(task)); !slices.Equal(p, []string{"llm/0", "llm/1"}) || e.tool.performed.Load() != 0 {
		t.Fatalf("journal %v, tool performed %d", p, e.tool.performed.Load())
	}
	msgs := m.requests()[1].body.Messages
	if last := msgs[len(msgs)-1]; last.ToolCallID != "chatcmpl-tool-5d1e0c9b8a7f4e3d" ||
		*last.Content != `{"error":"the arguments of count are not valid JSON"}` {
		t.Fatalf("tool message %+v", last)
	}
	replayed(e, m, task, raw, err)
}

// OpenAI's 429 need not carry Retry-After; its x-ratelimit-* headers say
// which limit ran out and when it resets, and the retry waits for that.
func TestOpenAIRateLimitWaitsForTheReset(t *testing.T) {
	t.Parallel()
	limited := canned{status: 429, file: "openai_429_rate_limit.json", header: map[string]string{
		"x-ratelimit-limit-requests": "3", "x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "1s",
		"x-ratelimit-limit-tokens": "30000", "x-ratelimit-remaining-tokens": "29950", "x-ratelimit-reset-tokens": "100ms",
	}}
	e, m := newRawEnv(t, nil, limited, ok("openai_text.json"))
	task := e.submit(`{"prompt": "hi"}`)
	raw, err := e.agent.Work(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	reqs := m.requests()
	// RetryBase is 10ms and the tokens limit, not the one that ran out,
	// resets after 100ms: only the requests limit's reset explains a second.
	if len(reqs) != 2 || reqs[1].at.Sub(reqs[0].at) < 900*time.Millisecond {
		t.Fatalf("%d requests, the retry %s after the 429", len(reqs), reqs[1].at.Sub(reqs[0].at))
	}
	if j := e.journal(task); len(j) != 1 || j[0].Performed != 1 || answer(t, raw).Answer != "x is 3" {
		t.Fatalf("journal %+v, result %s", j, raw)
	}
	replayed(e, m, task, raw, err)
}

// Azure's 429 asks to wait longer than an attempt should idle (in
// retry-after-ms, finer than its Retry-After): the attempt ends at once,
// telling the worker when to try again, and records nothing.
func TestAzureLongRetryAfterEndsTheAttempt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, m := newRawEnv(t, nil, canned{status: 429, file: "azure_429.json",
		header: map[string]string{"retry-after": "45", "retry-after-ms": "45500", "x-ratelimit-remaining-tokens": "0"}})
	task := e.submit(`{"prompt": "hi"}`)
	_, err := e.agent.Work(ctx, task)
	var after *agentledger.RetryAfterError
	var perm *agentledger.PermanentError
	if !errors.As(err, &after) || after.After != 45500*time.Millisecond || errors.As(err, &perm) || m.calls() != 1 {
		t.Fatalf("err %v, model called %d", err, m.calls())
	}
	if j := e.journal(task); len(j) != 0 {
		t.Fatalf("journal %+v", j)
	}
	m.add(ok("azure_text.json"))
	next := e.expireAndReclaim()
	raw, err := e.agent.Work(ctx, next)
	if err != nil || answer(t, raw).Answer != "hello from the deployment" || m.calls() != 2 {
		t.Fatalf("next attempt: %s %v, model called %d", raw, err, m.calls())
	}
	replayed(e, m, next, raw, err)
}

// A 500 with OpenAI's error body, then a proxy's 502 HTML page: both are
// retried within the attempt, and the answer is recorded once.
func TestServerErrorsThenAnswer(t *testing.T) {
	t.Parallel()
	e, m := newRawEnv(t, nil, canned{status: 500, file: "openai_500_server_error.json"},
		canned{status: 502, file: "proxy_502_bad_gateway.html"}, ok("openai_text.json"))
	task := e.submit(`{"prompt": "hi"}`)
	raw, err := e.agent.Work(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	if j := e.journal(task); len(j) != 1 || j[0].Performed != 1 || m.calls() != 3 || answer(t, raw).Answer != "x is 3" {
		t.Fatalf("journal %+v, model called %d, result %s", j, m.calls(), raw)
	}
	replayed(e, m, task, raw, err)
}

// A model that ignores the tools it was offered and answers in text
// (llama.cpp's server without a tool-call template does): that text is the
// answer, and no tool runs.
func TestLlamaCppTextInsteadOfToolCall(t *testing.T) {
	t.Parallel()
	e, m := newRawEnv(t, nil, ok("llamacpp_text_ignores_tools.json"))
	task := e.submit(`{"prompt": "use count on 1", "tools": ["count"]}`)
	raw, err := e.agent.Work(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	if a := answer(t, raw); a.Answer != "I would use the count tool with x = 1, which gives 2." || a.Steps != 1 ||
		e.tool.performed.Load() != 0 || len(m.requests()[0].body.Tools) != 1 {
		t.Fatalf("answer %+v, tool performed %d, tools offered %d", a, e.tool.performed.Load(), len(m.requests()[0].body.Tools))
	}
	replayed(e, m, task, raw, err)
}

// Ollama's OpenAI API has answered tool calls with finish_reason "stop":
// the calls, not the reason, decide that tools run.
func TestOllamaToolCallsWithFinishReasonStop(t *testing.T) {
	t.Parallel()
	e, m := newRawEnv(t, func(c *agent.Config) { c.Model = "llama3.1" },
		ok("ollama_tool_calls_stop.json"), ok("ollama_text.json"))
	task := e.submit(`{"prompt": "count", "tools": ["count"]}`)
	raw, err := e.agent.Work(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	if a := answer(t, raw); a.Answer != "x is 2" || a.Steps != 2 || e.tool.performed.Load() != 1 {
		t.Fatalf("answer %+v, tool performed %d", a, e.tool.performed.Load())
	}
	if p := paths(e.journal(task)); !slices.Equal(p, []string{"llm/0", "tool/0/call_m2x1k9qd", "llm/1"}) {
		t.Fatalf("journal %v", p)
	}
	replayed(e, m, task, raw, err)
}

// LiteLLM relaying a model that says something and calls a tool in one
// message: the text stays in the conversation, and the call runs.
func TestLiteLLMTextWithToolCalls(t *testing.T) {
	t.Parallel()
	e, m := newRawEnv(t, nil, ok("litellm_text_and_tool_calls.json"), ok("openai_text.json"))
	task := e.submit(`{"prompt": "count", "tools": ["count"]}`)
	raw, err := e.agent.Work(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	if p := paths(e.journal(task)); !slices.Equal(p, []string{"llm/0", "tool/0/toolu_01A09q90qw90lq917835lq9", "llm/1"}) {
		t.Fatalf("journal %v", p)
	}
	msgs := m.requests()[1].body.Messages
	if a := msgs[1]; a.Content == nil || *a.Content != "I'll count from 1 for you." || len(a.ToolCalls) != 1 ||
		a.ToolCalls[0].ID != "toolu_01A09q90qw90lq917835lq9" {
		t.Fatalf("assistant message %+v", a)
	}
	replayed(e, m, task, raw, err)
}

// azure is the configuration of an Azure OpenAI resource whose deployment
// "gpt-4o-prod" the tasks use.
func azure(m *rawModel) func(*agent.Config) {
	m.azure = true
	return func(c *agent.Config) {
		c.BaseURL, c.AzureAPIVersion, c.Model = m.srv.URL, "2024-10-21", "gpt-4o-prod"
	}
}

// Azure OpenAI: the deployment in the path, the api-version in the query,
// the key in an api-key header and no bearer token.
func TestAzureDeploymentURLAndKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	m := newRawModel(t, ok("azure_text.json"))
	m.use(e, azure(m))
	task := e.submit(`{"prompt": "hi"}`)
	raw, err := e.agent.Work(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	r := m.requests()[0]
	if r.path != "/openai/deployments/gpt-4o-prod/chat/completions" || r.query != "api-version=2024-10-21" ||
		r.body.Model != "gpt-4o-prod" || answer(t, raw).Answer != "hello from the deployment" {
		t.Fatalf("request %s?%s model %q, result %s", r.path, r.query, r.body.Model, raw)
	}
	replayed(e, m, task, raw, err)

	// A model that cannot name a deployment is refused before any request.
	bad := e.submit(`{"prompt": "hi", "model": "../admin"}`)
	_, err = e.agent.Work(context.Background(), bad)
	wantPermanent(t, err, `model "../admin" cannot name an Azure deployment`)
	if m.calls() != 1 {
		t.Fatalf("model called %d times", m.calls())
	}
}

// Azure's content filter withholds an answer with finish_reason
// "content_filter" and no content: the task fails saying so.
func TestAzureContentFilterFailsTheTask(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	m := newRawModel(t, ok("azure_content_filter.json"))
	m.use(e, azure(m))
	task := e.submit(`{"prompt": "something filtered"}`)
	raw, err := e.agent.Work(context.Background(), task)
	wantPermanent(t, err, "llm/0: the endpoint's content filter withheld the answer (finish_reason content_filter)")
	replayed(e, m, task, raw, err)
}

// vLLM started without --enable-auto-tool-choice refuses a request that
// offers tools, in its own error shape (no "error" object). The task fails
// with vLLM's words; nothing is journaled, so a replay once the server is
// fixed asks again.
func TestVLLMWithoutToolChoiceFailsClearly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, m := newRawEnv(t, nil, canned{status: 400, file: "vllm_400_auto_tool_choice.json"})
	task := e.submit(`{"prompt": "count", "tools": ["count"]}`)
	_, err := e.agent.Work(ctx, task)
	wantPermanent(t, err, `llm/0: model endpoint answered 400 Bad Request: "auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set`)
	if j := e.journal(task); len(j) != 0 || m.calls() != 1 {
		t.Fatalf("journal %+v, model called %d", j, m.calls())
	}
	e.fail(task, err)
	if _, err := e.Operator.Replay(ctx, "", task.ID); err != nil {
		t.Fatal(err)
	}
	m.add(ok("vllm_text.json"))
	raw, err := e.agent.Work(ctx, e.claim())
	if err != nil || m.calls() != 2 || answer(t, raw).Steps != 1 {
		t.Fatalf("replay after the fix: %s %v, model called %d", raw, err, m.calls())
	}
}

// An answer past agent.MaxAnswerBytes is not read whole: the task fails
// for good at once (asking again would pay for the same answer), nothing
// is journaled, and an answer of exactly the cap is read.
func TestAnswerLargerThanTheCap(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	var size atomic.Int64
	size.Store(agent.MaxAnswerBytes + 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		head := `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"`
		tail := `"}}]}`
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, head+strings.Repeat("x", int(size.Load())-len(head)-len(tail))+tail)
	}))
	t.Cleanup(srv.Close)
	e := newEnv(t, nil)
	e.agent = agent.New(e.config(func(c *agent.Config) { c.BaseURL, c.HTTPClient = srv.URL+"/v1", srv.Client() }), e.Ledger, e.reg)
	task := e.submit(`{"prompt": "hi"}`)
	_, err := e.agent.Work(context.Background(), task)
	var perm *agentledger.PermanentError
	if !errors.As(err, &perm) || !strings.Contains(err.Error(), "the model's answer is larger than 4 MiB") {
		t.Fatalf("err %v", err)
	}
	if calls.Load() != 1 || len(e.journal(task)) != 0 {
		t.Fatalf("model called %d times, journal %+v", calls.Load(), e.journal(task))
	}

	size.Store(agent.MaxAnswerBytes) // exactly the cap: read
	task = e.submit(`{"prompt": "hi again"}`)
	if raw, err := e.agent.Work(context.Background(), task); err != nil || len(raw) < agent.MaxAnswerBytes/2 {
		t.Fatalf("an answer of exactly the cap: %d bytes, %v", len(raw), err)
	}
}

// A 200 that is no chat completion (a proxy's or a login page's HTML, a
// base URL missing its /v1) says so, not only that a '<' was unexpected.
func TestAnHTMLAnswerIsNoChatCompletion(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html><body>Sign in</body></html>")
	}))
	t.Cleanup(srv.Close)
	e := newEnv(t, nil)
	e.agent = agent.New(e.config(func(c *agent.Config) { c.BaseURL, c.HTTPClient = srv.URL, srv.Client() }), e.Ledger, e.reg)
	_, err := e.agent.Work(context.Background(), e.submit(`{"prompt": "hi"}`))
	if err == nil || !strings.Contains(err.Error(), "the answer is not a chat completion (not JSON") {
		t.Fatalf("err %v", err)
	}
}

// An error answer that is not OpenAI's error JSON (a proxy's page at a
// wrong path) is said with its status once and its body on one line, not
// in go-openai's "error, status code: …, body: …".
func TestAProxyPageAnswerIsSaidPlainly(t *testing.T) {
	t.Parallel()
	e, _ := newRawEnv(t, nil, canned{status: 404, file: "proxy_502_bad_gateway.html"})
	task := e.submit(`{"prompt": "hi"}`)
	_, err := e.agent.Work(context.Background(), task)
	wantPermanent(t, err, "llm/0: model endpoint answered 404 Not Found: <html> <head><title>502 Bad Gateway</title></head>")
	if strings.Contains(err.Error(), "status code") {
		t.Fatalf("err %v: go-openai's wording", err)
	}
}
