package agent_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/agent"
	"github.com/agentledger/agentledger/agentledgertest/fakeopenai"
	"github.com/agentledger/agentledger/ledger"
)

func TestTooManyRequestsHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, fakeopenai.Reply{Status: 429, RetryAfter: "1"}, fakeopenai.Text("ok"))
	task := e.submit(`{"prompt": "hi"}`)
	start := time.Now()
	raw, err := e.agent.Work(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 900*time.Millisecond { // RetryBase is 10ms: only Retry-After explains a second
		t.Fatalf("retried after %s, before Retry-After", took)
	}
	if a := answer(t, raw); a.Answer != "ok" || e.fake.Calls() != 2 {
		t.Fatalf("answer %+v, model called %d", a, e.fake.Calls())
	}
	if j := e.journal(task); len(j) != 1 || j[0].Performed != 1 || j[0].State != ledger.StateCompleted {
		t.Fatalf("journal %+v", j)
	}
}

func TestServerErrorsAndTimeoutsAreRetried(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *agent.Config) { c.RequestTimeout = 300 * time.Millisecond },
		fakeopenai.Reply{Status: 500},
		fakeopenai.Reply{Delay: time.Minute, Content: "too late"},
		fakeopenai.Reply{Status: 502},
		fakeopenai.Text("ok"))
	raw, err := e.agent.Work(context.Background(), e.submit(`{"prompt": "hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	if a := answer(t, raw); a.Answer != "ok" || e.fake.Calls() != 4 {
		t.Fatalf("answer %+v, model called %d", a, e.fake.Calls())
	}
}

// When the in-attempt retries run out, the worker is told how long the
// endpoint asked to wait; the next attempt asks again and succeeds.
func TestRetriesExhausted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, func(c *agent.Config) { c.Retries = 1 },
		fakeopenai.Reply{Status: 429, RetryAfter: "1"}, fakeopenai.Reply{Status: 429, RetryAfter: "2"})
	task := e.submit(`{"prompt": "hi"}`)
	_, err := e.agent.Work(ctx, task)
	var after *agentledger.RetryAfterError
	var perm *agentledger.PermanentError
	if !errors.As(err, &after) || after.After != 2*time.Second || errors.As(err, &perm) || e.fake.Calls() != 2 {
		t.Fatalf("err %v, model called %d", err, e.fake.Calls())
	}
	if j := e.journal(task); len(j) != 0 { // no outcome yet, so nothing recorded
		t.Fatalf("journal %+v", j)
	}

	e.fake.Add(fakeopenai.Text("ok"))
	raw, err := e.agent.Work(ctx, e.expireAndReclaim())
	if err != nil || answer(t, raw).Answer != "ok" || e.fake.Calls() != 3 {
		t.Fatalf("next attempt: %s %v, model called %d", raw, err, e.fake.Calls())
	}
}

// Without a Retry-After the worker's own backoff decides: a plain error.
func TestServerErrorWithoutRetriesIsPlain(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *agent.Config) { c.Retries = -1 }, fakeopenai.Reply{Status: 503})
	_, err := e.agent.Work(context.Background(), e.submit(`{"prompt": "hi"}`))
	var after *agentledger.RetryAfterError
	var perm *agentledger.PermanentError
	if err == nil || errors.As(err, &after) || errors.As(err, &perm) || !strings.Contains(err.Error(), "503") || e.fake.Calls() != 1 {
		t.Fatalf("err %v, model called %d", err, e.fake.Calls())
	}
}

// A Retry-After longer than an attempt should idle ends the attempt at once.
func TestLongRetryAfterEndsTheAttempt(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, fakeopenai.Reply{Status: 429, RetryAfter: "120"})
	start := time.Now()
	_, err := e.agent.Work(context.Background(), e.submit(`{"prompt": "hi"}`))
	var after *agentledger.RetryAfterError
	if !errors.As(err, &after) || after.After != 2*time.Minute || time.Since(start) > 10*time.Second || e.fake.Calls() != 1 {
		t.Fatalf("err %v after %s, model called %d", err, time.Since(start), e.fake.Calls())
	}
}

// A 400 is permanent, is not retried, and is not recorded as the step's
// outcome: a replay after the operator fixed the cause asks again.
func TestBadRequestIsPermanent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, nil, fakeopenai.Fail(400, "model fake-model does not exist"))
	task := e.submit(`{"prompt": "hi"}`)
	_, err := e.agent.Work(ctx, task)
	var perm *agentledger.PermanentError
	if !errors.As(err, &perm) || !strings.Contains(err.Error(), "400") ||
		!strings.Contains(err.Error(), "model fake-model does not exist") || e.fake.Calls() != 1 {
		t.Fatalf("err %v, model called %d", err, e.fake.Calls())
	}
	// A refused request is not recorded as a failure: nothing happened, so
	// a replay after the operator fixes the model asks again.
	if j := e.journal(task); len(j) != 0 {
		t.Fatalf("journal %+v", j)
	}
	e.fail(task, err)
}

func TestNoEndpointDoesNothing(t *testing.T) {
	t.Parallel()
	var requests atomic.Int64
	hc := &http.Client{Transport: roundTripper(func(*http.Request) (*http.Response, error) {
		requests.Add(1)
		return nil, errors.New("no request may be sent")
	})}
	a := agent.New(agent.Config{APIKey: testKey, Model: "m", HTTPClient: hc}, noDoer{t}, nil)
	_, err := a.Work(context.Background(), &agentledger.Task{ID: 1, Kind: agent.Kind, Payload: []byte(`{"prompt":"hi"}`)})
	var perm *agentledger.PermanentError
	if !errors.As(err, &perm) || !errors.Is(err, agent.ErrNoEndpoint) || requests.Load() != 0 {
		t.Fatalf("err %v, requests %d", err, requests.Load())
	}
	const want = "agent tasks need a model endpoint: set AGENTLEDGER_LLM_BASE_URL " +
		"(and AGENTLEDGER_LLM_API_KEY, AGENTLEDGER_LLM_MODEL); steps tasks run without one"
	if err.Error() != want {
		t.Fatalf("message %q", err)
	}
}

// The key reaches the model endpoint and nothing else: not a ledger row,
// not an error, not a log line of the configuration.
func TestAPIKeyIsNeverRecorded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, nil,
		fakeopenai.Calls(call("c1", "count", `{"x":1}`)),
		fakeopenai.Reply{Status: 500, EchoAuth: true},
		fakeopenai.Text("done"),
		fakeopenai.Reply{Status: 400, EchoAuth: true, Message: "nope"})
	if _, err := e.agent.Work(ctx, e.submit(`{"prompt": "one", "tools": ["count"]}`)); err != nil {
		t.Fatal(err)
	}
	second := e.submit(`{"prompt": "two"}`)
	_, err := e.agent.Work(ctx, second)
	if err == nil || strings.Contains(err.Error(), testKey) || !strings.Contains(err.Error(), "Bearer [redacted]") {
		t.Fatalf("error %q", err)
	}
	e.fail(second, err) // the error as the worker stores it

	for _, r := range e.fake.Requests() {
		if !r.Authorized {
			t.Fatalf("request without the key: %q", r.Authorization)
		}
		if bytes.Contains(r.Body, []byte(testKey)) {
			t.Fatal("the key is in a request body")
		}
	}
	for _, table := range []string{"ledger", "tasks", "task_attempts"} {
		var dump string
		q := fmt.Sprintf("SELECT coalesce(string_agg(t::text, E'\\n'), '') FROM %s t", table)
		if err := e.DB.QueryRow(ctx, q).Scan(&dump); err != nil {
			t.Fatal(err)
		}
		if table == "ledger" && !strings.Contains(dump, "llm/0") {
			t.Fatalf("ledger dump has no completion: %s", dump)
		}
		if strings.Contains(dump, testKey) || strings.Contains(dump, testKey[3:15]) {
			t.Fatalf("the key is in table %s: %s", table, dump)
		}
	}

	cfg := e.config(nil)
	var log bytes.Buffer
	slog.New(slog.NewTextHandler(&log, nil)).Info("config", "cfg", cfg)
	for _, s := range []string{fmt.Sprint(cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg), log.String()} {
		if strings.Contains(s, testKey) {
			t.Fatalf("the key is printed: %s", s)
		}
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// The endpoint's words in an error are bounded: a long error body is cut.
func TestLongErrorTextIsCut(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, fakeopenai.Fail(400, strings.Repeat("bad request ", 1000)))
	_, err := e.agent.Work(context.Background(), e.submit(`{"prompt": "hi"}`))
	var perm *agentledger.PermanentError
	if !errors.As(err, &perm) || len(err.Error()) > 1200 || !strings.HasSuffix(err.Error(), "…") {
		t.Fatalf("error of %d bytes: %.200s", len(err.Error()), err)
	}
}
