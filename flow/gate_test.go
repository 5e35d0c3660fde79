package flow_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/flow"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

func put(t *testing.T, s *flow.Store, l flow.Limit) {
	t.Helper()
	if _, err := s.Put(context.Background(), l); err != nil {
		t.Fatal(err)
	}
}

// admitOrWait admits a call to target, waiting out deferrals as a worker
// would (without the queue round trip).
func admitOrWait(ctx context.Context, l *flow.Limiter, target string) (*flow.Pass, error) {
	for {
		p, err := l.Admit(ctx, target, time.Minute)
		var d *agentledger.DeferredError
		if !errors.As(err, &d) {
			return p, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Until(d.Until)):
		}
	}
}

// Three limiters (three daemons), ten goroutines each, 150 calls to a
// target capped at 4 in flight: never more than 4 at once, and all run.
func TestConcurrencyCapAcrossDaemons(t *testing.T) {
	t.Parallel()
	url := testdb.URL(t)
	const target, limit, calls = "http:https://billing.internal:8080", 4, 150
	put(t, flow.NewStore(testdb.Open(t, url)), flow.Limit{Target: target, Concurrency: limit})

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var inFlight, most, done atomic.Int64
	var left atomic.Int64
	left.Store(calls)
	var wg sync.WaitGroup
	for range 3 {
		l := flow.NewLimiter(testdb.Open(t, url), nil)
		for range 10 {
			wg.Go(func() {
				for left.Add(-1) >= 0 {
					p, err := admitOrWait(ctx, l, target)
					if err != nil {
						t.Error(err)
						return
					}
					n := inFlight.Add(1)
					for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
					}
					time.Sleep(time.Millisecond) // the call
					inFlight.Add(-1)
					p.Succeeded()
					done.Add(1)
				}
			})
		}
	}
	wg.Wait()
	if done.Load() != calls || most.Load() > limit {
		t.Fatalf("%d calls done (want %d), at most %d in flight (cap %d)", done.Load(), calls, most.Load(), limit)
	}
	t.Logf("%d calls, at most %d in flight", done.Load(), most.Load())
}

// A slot whose holder died comes back when its lease ends; a full cap
// defers with a reason that says so.
func TestSlotOfADeadHolderComesBack(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	const target = "mcp:shop"
	put(t, flow.NewStore(db), flow.Limit{Target: target, Concurrency: 1})
	l := flow.NewLimiter(db, nil)
	l.LeaseSlotsFor(time.Hour) // no renewal within the test: its leases end when it says
	ctx := context.Background()
	lost, err := l.Admit(ctx, target, time.Minute) // not ended until the end: its daemon stalled
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.Admit(ctx, target, time.Minute)
	var d *agentledger.DeferredError
	if !errors.As(err, &d) || d.Reason != "mcp:shop: 1 call in flight (the fleet's cap), waiting for one to end" {
		t.Fatalf("a full cap: %v", err)
	}
	if _, err := db.Exec(ctx, `UPDATE flow_slots SET expires_at = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	p, err := l.Admit(ctx, target, time.Minute)
	if err != nil {
		t.Fatalf("after the lease ended: %v", err)
	}
	p.Release()
	p.Succeeded() // a second end does nothing
	if p, err = l.Admit(ctx, target, time.Minute); err != nil {
		t.Fatalf("after a release: %v", err)
	}
	lost.Succeeded() // late: frees nothing, the slot is p's
	if _, err := l.Admit(ctx, target, time.Minute); !errors.As(err, &d) {
		t.Fatalf("a stalled holder's late end freed the slot another call holds: %v", err)
	}
	p.Succeeded()
}

// Failures open a breaker for every daemon, 4xx-like successes do not
// count, one daemon probes after the cool-down, and its outcome closes or
// reopens the breaker for all.
func TestBreakerOpensProbesAndCloses(t *testing.T) {
	t.Parallel()
	url := testdb.URL(t)
	db := testdb.Open(t, url)
	const target = "http:https://billing.internal:8080"
	put(t, flow.NewStore(db), flow.Limit{Target: target,
		Breaker: &flow.Breaker{Failures: 3, Window: time.Minute, Cooldown: time.Hour}})
	var opens, probes atomic.Int64
	a, b := flow.NewLimiter(testdb.Open(t, url), nil), flow.NewLimiter(testdb.Open(t, url), nil)
	a.ObserveBreakers(func(string) { opens.Add(1) }, func(_, r string) {
		if r == "started" {
			probes.Add(1)
		}
	})
	ctx := context.Background()
	var d *agentledger.DeferredError

	for i := range 2 {
		p, err := a.Admit(ctx, target, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Failed("503 Service Unavailable"); err != nil {
			t.Fatalf("failure %d of 3: %v", i+1, err)
		}
	}
	p, _ := b.Admit(ctx, target, time.Minute)
	p.Succeeded() // an answer: not a failure, and no reset of the window
	p, _ = a.Admit(ctx, target, time.Minute)
	if err := p.Failed("503 Service Unavailable"); !errors.As(err, &d) ||
		!strings.Contains(d.Reason, "circuit open until") || !strings.Contains(d.Reason, "3 failures in 60s (last: 503 Service Unavailable)") {
		t.Fatalf("third failure: %v", err)
	}
	if opens.Load() != 1 {
		t.Errorf("%d opens observed, want 1", opens.Load())
	}
	b.Changed() // the daemon hears the announcement
	if _, err := b.Admit(ctx, target, time.Minute); !errors.As(err, &d) || !strings.Contains(d.Reason, "circuit open until") {
		t.Fatalf("the other daemon, breaker open: %v", err)
	}

	// The cool-down is over: exactly one of the two probes.
	cooled := func() {
		t.Helper()
		if _, err := db.Exec(ctx, `UPDATE flow_breakers SET open_until = now() - interval '1 ms'`); err != nil {
			t.Fatal(err)
		}
		a.Changed()
		b.Changed()
	}
	cooled()
	pa, errA := a.Admit(ctx, target, time.Minute)
	if errA != nil || probes.Load() != 1 {
		t.Fatalf("first after the cool-down: %v, %d probes", errA, probes.Load())
	}
	if _, err := b.Admit(ctx, target, time.Minute); !errors.As(err, &d) || !strings.Contains(d.Reason, "half-open") {
		t.Fatalf("second after the cool-down: %v", err)
	}
	if err := pa.Failed("no answer within 30s"); !errors.As(err, &d) || !strings.Contains(d.Reason, "probe failed") {
		t.Fatalf("failed probe: %v", err)
	}
	if opens.Load() != 2 {
		t.Errorf("%d opens observed after a failed probe opened it again, want 2, as the breaker counts them", opens.Load())
	}
	b.Changed()
	if _, err := b.Admit(ctx, target, time.Minute); !errors.As(err, &d) {
		t.Fatalf("after a failed probe: %v", err)
	}

	cooled()
	pb, err := b.Admit(ctx, target, time.Minute)
	if err != nil {
		t.Fatalf("probe: %v", err)
	}
	pb.Succeeded()
	a.Changed()
	if p, err := a.Admit(ctx, target, time.Minute); err != nil {
		t.Fatalf("after a good probe: %v", err)
	} else {
		p.Succeeded()
	}
	bs, _, err := flow.NewStore(db).Breakers(ctx)
	if err != nil || len(bs) != 1 || bs[0].State != flow.Closed || bs[0].Opens != 2 || bs[0].Failures != 0 {
		t.Fatalf("breakers: %+v %v", bs, err)
	}

	// A probe that fails after an operator closed the breaker opens
	// nothing, and is not counted as an opening.
	for range 3 {
		p, err := a.Admit(ctx, target, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		_ = p.Failed("503 Service Unavailable")
	}
	cooled()
	probe, err := a.Admit(ctx, target, time.Minute)
	if err != nil {
		t.Fatalf("probe: %v", err)
	}
	if _, err := db.Exec(ctx, `UPDATE flow_breakers SET state = 'closed', failures = 0, open_until = NULL, probe_until = NULL`); err != nil {
		t.Fatal(err)
	}
	_ = probe.Failed("no answer within 30s")
	if opens.Load() != 3 {
		t.Errorf("%d opens observed, want 3: a probe failing on a breaker closed meanwhile opened nothing", opens.Load())
	}
}

// An operator opens a breaker for every daemon, with or without a
// configured breaker, and closes it; bad input changes nothing.
func TestBreakerOpenedByAnOperator(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	s := flow.NewStore(db)
	l := flow.NewLimiter(db, nil)
	ctx := context.Background()
	const target = "model:api.example.com"
	if _, err := s.OpenBreaker(ctx, target, 0); err != nil {
		t.Fatal(err)
	}
	var d *agentledger.DeferredError
	if _, err := l.Admit(ctx, target, time.Minute); !errors.As(err, &d) ||
		d.Reason != "model:api.example.com: circuit opened by an operator until closed (agentctl breaker close model:api.example.com)" {
		t.Fatalf("opened: %v", err)
	}
	was, err := s.CloseBreaker(ctx, target)
	if err != nil || was.State != flow.Open || !was.Manual {
		t.Fatalf("close: %+v %v", was, err)
	}
	l.Changed()
	if p, err := l.Admit(ctx, target, time.Minute); err != nil || p != nil {
		t.Fatalf("closed, no limit: %v %v", p, err)
	}
	var ie *agentledger.InvalidError
	for _, c := range []struct {
		target string
		d      time.Duration
		field  string
	}{{"http:*", 0, "target"}, {"slack-channel:C1", 0, "target"}, {"smtp:x", 0, "target"}, {target, -time.Second, "for"}} {
		if _, err := s.OpenBreaker(ctx, c.target, c.d); !errors.As(err, &ie) || ie.Field != c.field {
			t.Errorf("open %s for %s: %v, want an error naming %s", c.target, c.d, err, c.field)
		}
	}
	if _, err := s.CloseBreaker(ctx, "mcp:never"); !errors.Is(err, agentledger.ErrNotFound) {
		t.Errorf("close of a breaker never used: %v", err)
	}
	if bs, _, _ := s.Breakers(ctx); len(bs) != 1 {
		t.Errorf("breakers: %+v", bs)
	}
}

// Tokens spent past a model endpoint's token budget hold the next call.
func TestTokenBudget(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	const target = "model:api.example.com"
	put(t, flow.NewStore(db), flow.Limit{Target: target, Tokens: flow.Rate{N: 1000, Per: time.Minute}})
	l := flow.NewLimiter(db, nil)
	ctx := context.Background()
	p, err := l.Admit(ctx, target, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	p.Used(1500) // half a minute over the minute's budget
	p.Succeeded()
	var d *agentledger.DeferredError
	if _, err := l.Admit(ctx, target, time.Minute); !errors.As(err, &d) || !strings.Contains(d.Reason, "token budget (1000/min) spent") ||
		time.Until(d.Until) < 20*time.Second {
		t.Fatalf("over the budget: %v", err)
	}
	uses, err := flow.NewStore(db).Usage(ctx)
	if err != nil || len(uses) != 1 || uses[0].Target != target+" (tokens)" || uses[0].Wait < 20*time.Second {
		t.Fatalf("usage: %+v %v", uses, err)
	}
}

// A database that cannot be read defers the call (fail closed).
func TestAdmitFailsClosed(t *testing.T) {
	t.Parallel()
	db := testdb.Open(t, testdb.URL(t))
	l := flow.NewLimiter(db, nil)
	db.Close()
	var d *agentledger.DeferredError
	if _, err := l.Admit(context.Background(), "mcp:shop", time.Minute); !errors.As(err, &d) || !strings.Contains(d.Reason, "cannot be checked") {
		t.Fatalf("admit on a closed pool: %v", err)
	}
}

// An operator's breaker opened for a while on a target without a breaker
// of its own is probed when the while is over; a failed probe opens it
// again (for the default cool-down), a good one closes it.
func TestProbeOfAnOperatorsBreaker(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	s := flow.NewStore(db)
	l := flow.NewLimiter(db, nil)
	ctx := context.Background()
	const target = "mcp:shop"
	if _, err := s.OpenBreaker(ctx, target, time.Hour); err != nil {
		t.Fatal(err)
	}
	var d *agentledger.DeferredError
	if _, err := l.Admit(ctx, target, time.Minute); !errors.As(err, &d) || !strings.Contains(d.Reason, "opened by an operator until") {
		t.Fatalf("opened for an hour: %v", err)
	}
	over := func() {
		t.Helper()
		if _, err := db.Exec(ctx, `UPDATE flow_breakers SET open_until = now() - interval '1 ms'`); err != nil {
			t.Fatal(err)
		}
		l.Changed()
	}
	over()
	p, err := l.Admit(ctx, target, time.Minute)
	if err != nil || p == nil {
		t.Fatalf("the probe: %v %v", p, err)
	}
	if err := p.Failed("connection error"); !errors.As(err, &d) || !strings.Contains(d.Reason, "probe failed (connection error)") {
		t.Fatalf("failed probe: %v", err)
	}
	over()
	if p, err = l.Admit(ctx, target, time.Minute); err != nil {
		t.Fatal(err)
	}
	p.Succeeded()
	if bs, _, _ := s.Breakers(ctx); len(bs) != 1 || bs[0].State != flow.Closed {
		t.Fatalf("after a good probe: %+v", bs)
	}
}
