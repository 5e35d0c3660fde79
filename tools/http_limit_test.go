package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/agentledgertest/downstream"
	"github.com/agentledger/agentledger/flow"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/tools"
)

// A call over its origin's rate defers the task naming the origin and the
// wait; one that is not allowed is not admitted (it would hold capacity
// for a call that is refused); a limit that cannot be read defers too.
func TestHTTPCallsWaitForTheirLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	srv := newDownstream(t)
	target := flow.HTTP(mustURL(t, srv.URL))
	if _, err := flow.NewStore(e.DB).Put(ctx, flow.Limit{Target: target, Rate: flow.Rate{N: 1, Per: time.Minute}}); err != nil {
		t.Fatal(err)
	}
	tool, _ := e.http(tools.HTTPConfig{AllowedHosts: []string{hostOf(srv.URL)}})
	gated := &tools.Path{Ledger: e.Ledger, Gate: flow.NewLimiter(e.DB, nil)}
	task := e.task()
	if _, err := gated.Perform(ctx, &tools.Outgoing{Call: call(task, "tool/0", post(srv.URL+"/charges")), Tool: tool}); err != nil {
		t.Fatal(err)
	}
	_, err := gated.Perform(ctx, &tools.Outgoing{Call: call(task, "tool/1", post(srv.URL+"/charges")), Tool: tool})
	var d *agentledger.DeferredError
	// The wait is the minute less the time since the first booking: under
	// load that is 59.9s as well as 1m0s, so the reason is read up to it.
	if !errors.As(err, &d) || d.Target != target || !strings.HasPrefix(d.Reason, target+": rate limit, next slot in ") ||
		time.Until(d.Until) < 55*time.Second || srv.Hits() != 1 {
		t.Fatalf("over the rate: %v (%+v), %d hits", err, d, srv.Hits())
	}

	eff, err := tool.Effect(tools.Call{StepPath: "tool/2", Args: json.RawMessage(`{"method":"POST","url":"https://elsewhere.example/x"}`)})
	if err != nil || eff.Target != "" {
		t.Fatalf("a host that is not allowed: target %q (%v), want none, so that nothing is booked", eff.Target, err)
	}

	closed := testdb.Open(t, testdb.URL(t))
	closed.Close()
	down := &tools.Path{Ledger: e.Ledger, Gate: flow.NewLimiter(closed, nil)}
	if _, err := down.Perform(ctx, &tools.Outgoing{Call: call(task, "tool/3", post(srv.URL+"/charges")), Tool: tool}); !errors.As(err, &d) ||
		!strings.Contains(d.Reason, "cannot be checked") || srv.Hits() != 1 {
		t.Fatalf("limits unavailable: %v, %d hits", err, srv.Hits())
	}
}

// 503s open the origin's breaker: the failure that opens it, and every
// call while it is open, wait for it instead of using an attempt, and the
// downstream sees nothing while it is open.
func TestHTTPBreaker(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	srv := newDownstream(t)
	srv.Inject(downstream.Unavailable, downstream.Unavailable, downstream.Unavailable)
	target := flow.HTTP(mustURL(t, srv.URL))
	if _, err := flow.NewStore(e.DB).Put(ctx, flow.Limit{Target: target,
		Breaker: &flow.Breaker{Failures: 2, Window: time.Minute, Cooldown: time.Hour}}); err != nil {
		t.Fatal(err)
	}
	tool, _ := e.http(tools.HTTPConfig{AllowedHosts: []string{hostOf(srv.URL)}})
	gated := &tools.Path{Ledger: e.Ledger, Gate: flow.NewLimiter(e.DB, nil)}
	task := e.task()
	var d *agentledger.DeferredError
	_, err := gated.Perform(ctx, &tools.Outgoing{Call: call(task, "tool/0", post(srv.URL+"/charges")), Tool: tool})
	if err == nil || errors.As(err, &d) || isPermanent(err) {
		t.Fatalf("first 503: %v, want a transient error", err)
	}
	_, err = gated.Perform(ctx, &tools.Outgoing{Call: call(task, "tool/0", post(srv.URL+"/charges")), Tool: tool})
	if !errors.As(err, &d) || !strings.Contains(d.Reason, "circuit open until") || !strings.HasSuffix(d.Reason, "this call: HTTP 503") ||
		!d.Performed {
		t.Fatalf("second 503: %v (performed %v), want a wait for the breaker after the call it sent", err, d != nil && d.Performed)
	}
	_, err = gated.Perform(ctx, &tools.Outgoing{Call: call(task, "tool/0", post(srv.URL+"/charges")), Tool: tool})
	if !errors.As(err, &d) || !strings.Contains(d.Reason, "2 failures in 60s (last: HTTP 503)") || srv.Hits() != 2 || d.Performed {
		t.Fatalf("while open: %v, %d hits (want 2), performed %v (want a wait that sent nothing)", err, srv.Hits(), d != nil && d.Performed)
	}
	if n := e.count(`SELECT count(*) FROM ledger`); n != 0 {
		t.Fatalf("%d effects recorded for calls never answered", n)
	}
}

func mustURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// One limit on an origin holds the http_request tool's calls to it and a
// defined tool's that names the same origin as its Target: the second
// call, whichever tool makes it, waits for the rate.
func TestADefinedToolSharesTheOriginsLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	srv := newDownstream(t)
	origin := mustURL(t, srv.URL)
	target := flow.HTTP(origin)
	if _, err := flow.NewStore(e.DB).Put(ctx, flow.Limit{Target: target, Rate: flow.Rate{N: 1, Per: time.Minute}}); err != nil {
		t.Fatal(err)
	}
	httpTool, _ := e.http(tools.HTTPConfig{AllowedHosts: []string{hostOf(srv.URL)}})
	var performed int
	charge, err := tools.Define(tools.Spec[struct{}]{Name: "charge", Class: ledger.Keyed,
		Target: func(struct{}) string { return flow.HTTP(origin) },
		Perform: func(context.Context, ledger.Call, struct{}) (ledger.Result, error) {
			performed++
			return ledger.Result{Status: 200}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	gated := &tools.Path{Ledger: e.Ledger, Gate: flow.NewLimiter(e.DB, nil)}
	task := e.task()
	if _, err := gated.Perform(ctx, &tools.Outgoing{Call: call(task, "tool/0", post(srv.URL+"/charges")), Tool: httpTool}); err != nil {
		t.Fatal(err)
	}
	_, err = gated.Perform(ctx, &tools.Outgoing{Call: call(task, "tool/1", `{}`), Tool: charge})
	var d *agentledger.DeferredError
	if !errors.As(err, &d) || d.Target != target || performed != 0 {
		t.Fatalf("the defined tool's call over the origin's rate: %v, performed %d times; want it deferred for %s", err, performed, target)
	}
}
