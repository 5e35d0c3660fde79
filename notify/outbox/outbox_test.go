package outbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testenv"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/notify/outbox"
)

type env struct {
	*testenv.Env
	rules  *outbox.Rules
	box    *outbox.Store
	queues int
}

func newEnv(t *testing.T) *env {
	e := &env{Env: testenv.New(t)}
	e.rules = outbox.NewRules(e.DB)
	e.box = outbox.NewStore(e.DB)
	e.box.Now = e.Now
	if _, err := e.rules.Put(context.Background(), outbox.Rule{Name: "ops", Channel: "ops", Events: outbox.Events}, false); err != nil {
		t.Fatal(err)
	}
	return e
}

// retryTask makes a task, alone in a queue of its own, fail n times (one
// retrying event each).
func (e *env) retryTask(n int) *agentledger.Task {
	e.T.Helper()
	ctx := context.Background()
	e.queues++
	q := fmt.Sprintf("q%d", e.queues)
	task := e.Enqueue(claims.EnqueueParams{Queue: q, MaxAttempts: 10})
	for range n {
		got, err := e.Claims.Claim(ctx, claims.ClaimParams{Queue: q, Worker: "w", Limit: 1, Lease: time.Minute})
		if err != nil || len(got) != 1 {
			e.T.Fatalf("claim: %v %v", got, err)
		}
		if _, err := e.Claims.Fail(ctx, claims.Failure{Lease: agentledger.Lease{TaskID: got[0].ID, Token: got[0].LeaseToken}, Error: "boom"}); err != nil {
			e.T.Fatal(err)
		}
	}
	return task
}

func (e *env) claim(owner string, n int) []outbox.Claimed {
	e.T.Helper()
	got, err := e.box.Claim(context.Background(), owner, n, time.Minute)
	if err != nil {
		e.T.Fatal(err)
	}
	return got
}

func TestRules(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for _, bad := range []outbox.Rule{
		{Name: "Bad Name", Channel: "ops", Events: outbox.Events},
		{Name: "x", Channel: "", Events: outbox.Events},
		{Name: "x", Channel: "has space", Events: outbox.Events},
		{Name: "x", Channel: "ops"},
		{Name: "x", Channel: "ops", Events: []string{"running"}},
	} {
		if _, err := e.rules.Put(ctx, bad, true); !errors.Is(err, agentledger.ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", bad, err)
		}
	}
	if _, err := e.rules.Put(ctx, outbox.Rule{Name: "ops", Channel: "elsewhere", Events: []string{"dead"}}, false); !errors.Is(err, agentledger.ErrConflict) {
		t.Fatalf("duplicate: %v, want ErrConflict", err)
	}
	r, err := e.rules.Put(ctx, outbox.Rule{Name: "ops", Channel: "elsewhere", Queue: "billing", Events: []string{"dead", "retrying", "dead"}}, true)
	if err != nil || r.Channel != "elsewhere" || strings.Join(r.Events, ",") != "retrying,dead" || r.Queue != "billing" || r.Tenant != "" {
		t.Fatalf("replace: %+v %v", r, err)
	}
	if was, err := e.rules.SetEnabled(ctx, "ops", false); err != nil || !was {
		t.Fatal(err)
	}
	list, err := e.rules.List(ctx)
	if err != nil || len(list) != 1 || !list[0].Disabled {
		t.Fatalf("list: %+v %v", list, err)
	}
	if err := e.rules.Remove(ctx, "ops"); err != nil {
		t.Fatal(err)
	}
	if err := e.rules.Remove(ctx, "ops"); !errors.Is(err, agentledger.ErrNotFound) {
		t.Fatalf("remove twice: %v", err)
	}
	if _, err := e.rules.SetEnabled(ctx, "nope", true); !errors.Is(err, agentledger.ErrNotFound) {
		t.Fatalf("enable missing: %v", err)
	}
}

// The events of one (task, rule) are claimed one at a time, in order;
// other tasks' events and messages are not held up.
func TestClaimInOrderPerRule(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	a := e.retryTask(3)
	b := e.retryTask(1)
	got := e.claim("d", 10)
	if len(got) != 2 || got[0].TaskID != a.ID || got[1].TaskID != b.ID || got[0].Attempt != 1 {
		t.Fatalf("claimed %+v, want the first event of each task", got)
	}
	if more := e.claim("d2", 10); len(more) != 0 {
		t.Fatalf("claimed %d more while the first are held", len(more))
	}
	if err := e.box.Delivered(ctx, got[0], ""); err != nil {
		t.Fatal(err)
	}
	next := e.claim("d2", 10)
	if len(next) != 1 || next[0].TaskID != a.ID || next[0].Attempt != 2 {
		t.Fatalf("after delivering a's first: %+v, want a's second", next)
	}
	// A retry waiting out its backoff still holds the rule's later events.
	if err := e.box.Retry(ctx, next[0], e.Now().Add(time.Hour), true, "slack down"); err != nil {
		t.Fatal(err)
	}
	if more := e.claim("d2", 10); len(more) != 0 {
		t.Fatalf("claimed %+v while a's second waits", more)
	}
	e.Advance(2 * time.Hour)
	// Due again: a's second, and b's first, whose claim by "d" expired.
	again := e.claim("d3", 10)
	if len(again) != 2 || again[0].ID != got[1].ID || again[1].ID != next[0].ID ||
		again[1].Failures != 1 || again[1].LastError != "slack down" {
		t.Fatalf("after the backoff: %+v", again)
	}
}

// A claim whose lease expired is fenced out of the outbox and the ledger.
func TestExpiredClaimIsFenced(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	task := e.retryTask(1)
	old := e.claim("a", 1)[0]
	e.Advance(2 * time.Minute)
	cur := e.claim("b", 1)
	if len(cur) != 1 || cur[0].ID != old.ID || cur[0].Token == old.Token {
		t.Fatalf("re-claim: %+v", cur)
	}
	attempt := func(c outbox.Claimed) ledger.Attempt {
		return ledger.Attempt{Tenant: c.Tenant, TaskID: c.TaskID, Generation: c.Generation, Fence: c.Fence()}
	}
	var performed atomic.Int32
	eff := ledger.Effect{Operation: "notify.post", StepPath: "notify/ops", Class: ledger.Reconcilable,
		Request: json.RawMessage(`{"rule":"ops"}`),
		Perform: func(context.Context, ledger.Call) (ledger.Result, error) {
			performed.Add(1)
			return ledger.Result{ExternalRef: "C1/1.0"}, nil
		},
		Reconcile: func(context.Context, ledger.Call) (ledger.Result, bool, error) { return ledger.Result{}, false, nil },
	}
	if _, err := e.Ledger.Do(ctx, attempt(old), eff); !errors.Is(err, agentledger.ErrLeaseLost) || performed.Load() != 0 {
		t.Fatalf("stale claim's effect: %v, performed %d; want ErrLeaseLost and nothing performed", err, performed.Load())
	}
	if _, err := e.Ledger.Do(ctx, attempt(cur[0]), eff); err != nil || performed.Load() != 1 {
		t.Fatalf("current claim's effect: %v, performed %d", err, performed.Load())
	}
	if err := e.box.Delivered(ctx, old, ""); !errors.Is(err, agentledger.ErrLeaseLost) {
		t.Fatalf("stale delivered: %v", err)
	}
	if err := e.box.Delivered(ctx, cur[0], ""); err != nil {
		t.Fatal(err)
	}
	// Once delivered, the claim fences nothing more either.
	eff.StepPath = "notify/ops/2"
	if _, err := e.Ledger.Do(ctx, attempt(cur[0]), eff); !errors.Is(err, agentledger.ErrLeaseLost) {
		t.Fatalf("effect after delivery: %v", err)
	}
	if j := e.Journal(task); len(j) != 1 || j[0].State != ledger.StateCompleted || j[0].StepPath != "notify/ops" {
		t.Fatalf("journal %+v, want the one post, in the task's journal", j)
	}
}

type handlerFunc func(context.Context, outbox.Claimed) error

func (f handlerFunc) Deliver(ctx context.Context, c outbox.Claimed) (string, error) {
	return "", f(ctx, c)
}

// Failed deliveries back off and give up after MaxFailures; a rate limit's
// wait counts no failure; a permanent error gives up at once.
func TestDispatcherSettles(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var calls atomic.Int32
	var answer atomic.Value
	d, err := outbox.NewDispatcher(e.box, handlerFunc(func(context.Context, outbox.Claimed) error {
		calls.Add(1)
		return answer.Load().(func() error)()
	}), outbox.Config{Owner: "d", MaxFailures: 3, Backoff: agentledger.Backoff{Base: time.Second, Max: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	round := func() int {
		e.Advance(time.Minute)
		n, err := d.RunOnce(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	task := e.retryTask(1)
	event := func() outbox.Event {
		es, err := e.box.ForTask(ctx, "", task.ID)
		if err != nil || len(es) != 1 {
			t.Fatalf("events %+v %v", es, err)
		}
		return es[0]
	}

	answer.Store(func() error { return agentledger.RetryAfter(errors.New("slack: 429"), 30*time.Second) })
	round()
	round()
	if ev := event(); ev.State != outbox.StatePending || ev.Failures != 0 {
		t.Fatalf("after two rate limits: %s with %d failures", ev.State, ev.Failures)
	}
	answer.Store(func() error { return errors.New("connection reset") })
	for range 3 {
		round()
	}
	if ev := event(); ev.State != outbox.StateFailed || ev.Failures != 3 || !strings.Contains(ev.LastError, "gave up after 3") {
		t.Fatalf("after 3 failures: %+v", ev)
	}
	if n := round(); n != 0 {
		t.Fatalf("a failed event was claimed again")
	}

	task = e.retryTask(1)
	answer.Store(func() error { return agentledger.Permanent(errors.New("channel_not_found")) })
	before := calls.Load()
	round()
	round()
	if ev := event(); ev.State != outbox.StateFailed || ev.Failures != 1 || calls.Load()-before != 1 {
		t.Fatalf("permanent: %+v after %d calls", ev, calls.Load()-before)
	}
}
