package agent_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/agent"
	"github.com/agentledger/agentledger/agentledgertest/fakeopenai"
	"github.com/agentledger/agentledger/flow"
)

// Model requests go through the endpoint's fleet-wide limits: over its
// request rate the task waits (no model call, no attempt used), the
// tokens an answer reports are booked on the token budget, and 5xx
// answers open its breaker, after which the task waits for it.
func TestModelRequestsAreGated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var lim *flow.Limiter
	e := newEnv(t, func(c *agent.Config) { c.Retries = -1 },
		fakeopenai.Reply{Content: "ok", PromptTokens: 40, CompletionTokens: 2}, fakeopenai.Reply{Status: 503}, fakeopenai.Reply{Status: 503})
	u, _ := url.Parse(e.fake.BaseURL())
	target := flow.Model(u.Hostname())
	store := flow.NewStore(e.DB)
	if _, err := store.Put(ctx, flow.Limit{Target: target, Rate: flow.Rate{N: 1, Per: time.Minute},
		Tokens: flow.Rate{N: 100_000, Per: time.Minute}}); err != nil {
		t.Fatal(err)
	}
	lim = flow.NewLimiter(e.DB, nil)
	e.agent = agent.New(e.config(func(c *agent.Config) { c.Retries = -1; c.Gate = lim }), e.Ledger, e.reg)

	if _, err := e.agent.Work(ctx, e.submit(`{"prompt": "hi"}`)); err != nil {
		t.Fatal(err)
	}
	uses, _ := store.Usage(ctx)
	if len(uses) != 2 || uses[1].Target != target+" (tokens)" {
		t.Fatalf("usage after one answer: %+v, want the request and its tokens booked", uses)
	}
	task := e.submit(`{"prompt": "again"}`)
	_, err := e.agent.Work(ctx, task)
	var d *agentledger.DeferredError
	if !errors.As(err, &d) || !strings.Contains(d.Reason, "rate limit, next slot in") || e.fake.Calls() != 1 {
		t.Fatalf("over the rate: %v, %d model calls", err, e.fake.Calls())
	}

	if _, err := store.Put(ctx, flow.Limit{Target: target,
		Breaker: &flow.Breaker{Failures: 2, Window: time.Minute, Cooldown: time.Hour}}); err != nil {
		t.Fatal(err)
	}
	lim.Changed()
	if _, err := e.agent.Work(ctx, task); err == nil || errors.As(err, &d) {
		t.Fatalf("first 503: %v, want the endpoint's error", err)
	}
	if _, err := e.agent.Work(ctx, task); !errors.As(err, &d) || !strings.Contains(d.Reason, "circuit open until") || !d.Performed {
		t.Fatalf("second 503: %v, want a wait for the breaker, after the call the endpoint saw (performed %v)", err, d != nil && d.Performed)
	}
	before := e.fake.Calls()
	if _, err := e.agent.Work(ctx, task); !errors.As(err, &d) || e.fake.Calls() != 3 || d.Performed != (e.fake.Calls() > before) {
		t.Fatalf("while open: %v, %d model calls (want 3), performed %v", err, e.fake.Calls(), d != nil && d.Performed)
	}
}
