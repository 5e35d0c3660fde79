package ledger_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/ledger"
)

func TestPerformOnceThenServeFromLedger(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	e.task()
	a, _ := e.claim("w")
	c := &counter{}
	eff := effect(ledger.Keyed, "tool/0", `{"amount": 10, "to": "acme"}`, c.perform)

	first, err := e.Ledger.Do(ctx, a, eff)
	if err != nil || first.Replayed || string(first.Body) != `{"n": 1}` || first.Status != 200 {
		t.Fatalf("first: %+v %v", first, err)
	}
	// Same request, other spelling: served, not performed (drill 8: the
	// same status and the same bytes as the first call returned).
	eff.Request = json.RawMessage(`{"to":"acme","amount":10}`)
	again, err := e.Ledger.Do(ctx, a, eff)
	if err != nil || !again.Replayed || string(again.Body) != string(first.Body) || again.Status != first.Status {
		t.Fatalf("again: %+v %v", again, err)
	}
	if c.calls.Load() != 1 {
		t.Fatalf("performed %d times", c.calls.Load())
	}
	j, _ := e.Ledger.Journal(ctx, a.TaskID, a.Generation)
	if len(j) != 1 || j[0].State != ledger.StateCompleted || j[0].Performed != 1 || j[0].StepPath != "tool/0" {
		t.Fatalf("journal %+v", j)
	}
}

// Drill 3: same key, different request → ErrKeyReuse, nothing performed.
func TestKeyReuseWithAnotherRequest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	e.task()
	a, _ := e.claim("w")
	c := &counter{}
	if _, err := e.Ledger.Do(ctx, a, effect(ledger.Keyed, "tool/0", `{"amount":10}`, c.perform)); err != nil {
		t.Fatal(err)
	}
	_, err := e.Ledger.Do(ctx, a, effect(ledger.Keyed, "tool/0", `{"amount":11}`, c.perform))
	if !errors.Is(err, agentledger.ErrKeyReuse) || c.calls.Load() != 1 {
		t.Fatalf("err %v, performed %d", err, c.calls.Load())
	}
}

func TestStaleAttemptPerformsNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	e.task()
	zombie, _ := e.claim("a")
	e.expireAndReclaim("b")
	c := &counter{}
	_, err := e.Ledger.Do(ctx, zombie, effect(ledger.Keyed, "tool/0", `{}`, c.perform))
	if !errors.Is(err, agentledger.ErrLeaseLost) || c.calls.Load() != 0 {
		t.Fatalf("err %v, performed %d", err, c.calls.Load())
	}
}

func TestTransientThenPermanent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	e.task()
	a, _ := e.claim("w")
	fail := errors.New("503 from downstream")
	c := &counter{fn: func(context.Context, ledger.Call) (ledger.Result, error) { return ledger.Result{}, fail }}
	eff := effect(ledger.Keyed, "tool/0", `{}`, c.perform)
	if _, err := e.Ledger.Do(ctx, a, eff); !errors.Is(err, fail) {
		t.Fatalf("transient: %v", err)
	}
	c.fn = func(context.Context, ledger.Call) (ledger.Result, error) {
		return ledger.Result{Status: 422, Body: json.RawMessage(`{"error":"amount too large"}`)},
			agentledger.Permanent(errors.New("422 amount too large"))
	}
	_, err := e.Ledger.Do(ctx, a, eff)
	var failed *ledger.FailedError
	var perm *agentledger.PermanentError
	if !errors.As(err, &failed) || !errors.As(err, &perm) || failed.Result.Status != 422 {
		t.Fatalf("permanent: %v", err)
	}
	// Later calls get the same failure without performing.
	_, err = e.Ledger.Do(ctx, a, eff)
	if !errors.As(err, &failed) || failed.Message != "422 amount too large" || string(failed.Result.Body) != `{"error": "amount too large"}` || c.calls.Load() != 2 {
		t.Fatalf("stored failure: %v (performed %d)", err, c.calls.Load())
	}
}

// Drill 5 in the ledger: the effect was performed but its attempt lost the
// lease before recording. Keyed/pure: performed again with the same key.
// Unsafe: never performed blindly; the effect is unknown until resolved.
func TestUnknownOutcomeRecoveryByClass(t *testing.T) {
	t.Parallel()
	for _, class := range []ledger.Class{ledger.Pure, ledger.Keyed, ledger.Unsafe, ledger.Reconcilable} {
		t.Run(string(class), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			e := newEnv(t)
			e.task()
			a, _ := e.claim("a")
			var keys []string
			c := &counter{}
			c.fn = func(_ context.Context, call ledger.Call) (ledger.Result, error) {
				keys = append(keys, call.DownstreamKey("api"))
				if len(keys) == 1 {
					e.expireAndReclaim("b") // a loses its lease after performing
				}
				return ledger.Result{Status: 201, ExternalRef: "ref-1"}, nil
			}
			eff := effect(class, "tool/0", `{"x":1}`, c.perform)
			reconciled := 0
			eff.Reconcile = func(context.Context, ledger.Call) (ledger.Result, bool, error) {
				reconciled++
				return ledger.Result{Status: 201, ExternalRef: "found"}, true, nil
			}
			if _, err := e.Ledger.Do(ctx, a, eff); !errors.Is(err, agentledger.ErrLeaseLost) {
				t.Fatalf("a: %v, want ErrLeaseLost at record", err)
			}
			b := e.reclaimed(a) // the task was claimed again

			res, err := e.Ledger.Do(ctx, b, eff)
			switch class {
			case ledger.Pure, ledger.Keyed:
				if err != nil || c.calls.Load() != 2 || keys[0] != keys[1] {
					t.Fatalf("b: %v, performed %d, keys %v", err, c.calls.Load(), keys)
				}
			case ledger.Reconcilable:
				if err != nil || c.calls.Load() != 1 || reconciled != 1 || res.ExternalRef != "found" {
					t.Fatalf("b: %+v %v, performed %d, reconciled %d", res, err, c.calls.Load(), reconciled)
				}
				// The journal counts the one performance, not b's look-up.
				if j, _ := e.Ledger.Journal(ctx, b.TaskID, b.Generation); len(j) != 1 || j[0].Performed != 1 {
					t.Fatalf("journal %+v, want performed once", j)
				}
			case ledger.Unsafe:
				if !errors.Is(err, ledger.ErrNeedsAttention) || c.calls.Load() != 1 {
					t.Fatalf("b: %v, performed %d", err, c.calls.Load())
				}
				j, _ := e.Ledger.Journal(ctx, b.TaskID, b.Generation)
				if j[0].State != ledger.StateUnknown {
					t.Fatalf("state %s", j[0].State)
				}
				// Asking again does not perform either.
				if _, err := e.Ledger.Do(ctx, b, eff); !errors.Is(err, ledger.ErrNeedsAttention) || c.calls.Load() != 1 {
					t.Fatalf("again: %v, performed %d", err, c.calls.Load())
				}
			}
		})
	}
}

// Drill 2: two goroutines of one attempt and a zombie race on one key; the
// keyed downstream sees one key, so there is one business effect.
func TestRaceOnOneKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	e.task()
	zombie, _ := e.claim("a")
	current, _ := e.expireAndReclaim("b")

	var mu sync.Mutex
	seen := map[string]int{}
	perform := func(_ context.Context, call ledger.Call) (ledger.Result, error) {
		mu.Lock()
		seen[call.DownstreamKey("bank")]++
		mu.Unlock()
		return ledger.Result{Status: 201}, nil
	}
	var wg sync.WaitGroup
	errs := make([]error, 9)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := current
			if i%3 == 0 {
				a = zombie
			}
			_, errs[i] = e.Ledger.Do(ctx, a, effect(ledger.Keyed, "tool/0", `{"charge":5}`, perform))
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if i%3 == 0 && !errors.Is(err, agentledger.ErrLeaseLost) {
			t.Errorf("zombie call %d: %v, want ErrLeaseLost", i, err)
		}
		if i%3 != 0 && err != nil {
			t.Errorf("call %d: %v", i, err)
		}
	}
	if len(seen) != 1 {
		t.Fatalf("%d distinct downstream keys: %v", len(seen), seen)
	}
}

func TestLocalEffectCommitsWithItsRow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	parent := e.task()
	a, _ := e.claim("w")
	child := ledger.Effect{Operation: "task.create", StepPath: "tool/0", Class: ledger.Local,
		Request: json.RawMessage(`{"kind":"echo"}`),
		PerformLocal: func(ctx context.Context, _ ledger.Call, db ledger.DB) (ledger.Result, error) {
			r, err := claims.New(db).Enqueue(ctx, claims.EnqueueParams{Kind: "echo", Queue: "children"})
			if err != nil {
				return ledger.Result{}, err
			}
			return ledger.Result{Body: json.RawMessage(`{"task_id":` + itoa(r.Task.ID) + `}`)}, nil
		}}
	for range 3 {
		if _, err := e.Ledger.Do(ctx, a, child); err != nil {
			t.Fatal(err)
		}
	}
	kids, _ := e.Claims.List(ctx, claims.ListParams{Queue: "children"})
	if len(kids) != 1 || kids[0].ID == parent {
		t.Fatalf("%d children", len(kids))
	}
	// A local effect that fails leaves neither its row nor its ledger row.
	boom := child
	boom.StepPath = "tool/1"
	boom.PerformLocal = func(ctx context.Context, _ ledger.Call, db ledger.DB) (ledger.Result, error) {
		if _, err := claims.New(db).Enqueue(ctx, claims.EnqueueParams{Kind: "echo", Queue: "children"}); err != nil {
			return ledger.Result{}, err
		}
		return ledger.Result{}, errors.New("validation failed after insert")
	}
	if _, err := e.Ledger.Do(ctx, a, boom); err == nil {
		t.Fatal("want error")
	}
	kids, _ = e.Claims.List(ctx, claims.ListParams{Queue: "children"})
	j, _ := e.Ledger.Journal(ctx, a.TaskID, a.Generation)
	if len(kids) != 1 || len(j) != 1 {
		t.Fatalf("after a failed local effect: %d children, %d journal entries", len(kids), len(j))
	}
}

// Keys depend on the generation: a re-run as new intent performs again.
func TestNewGenerationPerformsAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	id := e.task()
	a, _ := e.claim("w")
	c := &counter{}
	eff := effect(ledger.Keyed, "tool/0", `{}`, c.perform)
	if _, err := e.Ledger.Do(ctx, a, eff); err != nil {
		t.Fatal(err)
	}
	if err := e.Claims.Succeed(ctx, leaseOf(a), nil); err != nil {
		t.Fatal(err)
	}
	// Replay: same generation, served.
	if _, err := e.Operator.Replay(ctx, "", id); err != nil {
		t.Fatal(err)
	}
	r, task := e.claim("w")
	if task.Generation != 1 || task.Attempt != 1 {
		t.Fatalf("replayed task: generation %d attempt %d", task.Generation, task.Attempt)
	}
	if res, err := e.Ledger.Do(ctx, r, eff); err != nil || !res.Replayed || c.calls.Load() != 1 {
		t.Fatalf("replay: %+v %v performed %d", res, err, c.calls.Load())
	}
	e.Claims.Succeed(ctx, leaseOf(r), nil)
	// Re-run: new generation, new key, performed.
	if _, err := e.Operator.Rerun(ctx, "", id); err != nil {
		t.Fatal(err)
	}
	n, task := e.claim("w")
	if task.Generation != 2 {
		t.Fatalf("generation %d", task.Generation)
	}
	if res, err := e.Ledger.Do(ctx, n, eff); err != nil || res.Replayed || c.calls.Load() != 2 {
		t.Fatalf("rerun: %+v %v performed %d", res, err, c.calls.Load())
	}
	if _, err := e.Operator.Replay(ctx, "", id); !errors.Is(err, agentledger.ErrConflict) {
		t.Fatalf("requeue of a running task: %v", err)
	}
}

// A pending row is an unknown outcome whoever left it: the same attempt
// presenting a reconcilable effect again after a transient failure looks it
// up first, and an unsafe one is not performed again.
func TestPendingRowOfTheSameAttempt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	e.task()
	a, _ := e.claim("w")
	posted := 0
	post := &counter{fn: func(context.Context, ledger.Call) (ledger.Result, error) {
		posted++
		return ledger.Result{}, errors.New("timeout after the post landed")
	}}
	eff := effect(ledger.Reconcilable, "notify/ops", `{"text":"hi"}`, post.perform)
	lookups := 0
	eff.Reconcile = func(context.Context, ledger.Call) (ledger.Result, bool, error) {
		lookups++
		return ledger.Result{ExternalRef: "C1/1.0001"}, posted > 0, nil
	}
	if _, err := e.Ledger.Do(ctx, a, eff); err == nil {
		t.Fatal("want the transient error")
	}
	res, err := e.Ledger.Do(ctx, a, eff)
	if err != nil || res.ExternalRef != "C1/1.0001" || posted != 1 || lookups != 1 {
		t.Fatalf("retry: %+v %v, posted %d, lookups %d", res, err, posted, lookups)
	}
	if j, _ := e.Ledger.Journal(ctx, a.TaskID, a.Generation); len(j) != 1 || j[0].Performed != 1 {
		t.Fatalf("journal %+v, want performed once: the retry found the post", j)
	}

	wire := &counter{fn: func(context.Context, ledger.Call) (ledger.Result, error) {
		return ledger.Result{}, errors.New("connection reset")
	}}
	unsafe := effect(ledger.Unsafe, "tool/1", `{"wire":1}`, wire.perform)
	if _, err := e.Ledger.Do(ctx, a, unsafe); err == nil {
		t.Fatal("want the transient error")
	}
	if _, err := e.Ledger.Do(ctx, a, unsafe); !errors.Is(err, ledger.ErrNeedsAttention) || wire.calls.Load() != 1 {
		t.Fatalf("unsafe retry: %v, performed %d", err, wire.calls.Load())
	}
}

// Odd bytes from a downstream (NUL, invalid UTF-8) never make an outcome
// unrecordable.
func TestOddBytesAreStorable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	e.task()
	a, _ := e.claim("w")
	bin := &counter{fn: func(context.Context, ledger.Call) (ledger.Result, error) {
		return ledger.Result{Status: 200, Body: json.RawMessage(`{"raw":"a\u0000b"}`), ExternalRef: "r\x00"}, nil
	}}
	if _, err := e.Ledger.Do(ctx, a, effect(ledger.Keyed, "tool/0", `{}`, bin.perform)); err != nil {
		t.Fatalf("NUL in the result: %v", err)
	}
	bad := &counter{fn: func(context.Context, ledger.Call) (ledger.Result, error) {
		return ledger.Result{Status: 400}, agentledger.Permanent(errors.New("bad \xff\x00 input"))
	}}
	_, err := e.Ledger.Do(ctx, a, effect(ledger.Keyed, "tool/1", `{}`, bad.perform))
	var failed *ledger.FailedError
	if !errors.As(err, &failed) {
		t.Fatalf("permanent failure with odd bytes: %v", err)
	}
}

// An unsafe call that failed in a way that may have taken effect is
// unknown at once, not retried: the task parks for an operator. A call the
// downstream turned away (429 with Retry-After) or a refusal before
// performing leaves nothing behind, and runs again later.
func TestUnsafeFailureIsUnknownAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	e.task()
	a, task := e.claim("a")
	c := &counter{fn: func(context.Context, ledger.Call) (ledger.Result, error) {
		return ledger.Result{}, errors.New("502 Bad Gateway")
	}}
	_, err := e.Ledger.Do(ctx, a, effect(ledger.Unsafe, "tool/0", `{}`, c.perform))
	if !errors.Is(err, agentledger.ErrNeedsAttention) {
		t.Fatalf("transient failure of an unsafe call: %v, want ErrNeedsAttention", err)
	}
	if j := e.Journal(task); len(j) != 1 || j[0].State != ledger.StateUnknown || !strings.Contains(j[0].Error, "502") {
		t.Fatalf("journal %+v, want the effect unknown with the error", j)
	}
	if _, err := e.Ledger.Do(ctx, a, effect(ledger.Unsafe, "tool/0", `{}`, c.perform)); !errors.Is(err, agentledger.ErrNeedsAttention) || c.calls.Load() != 1 {
		t.Fatalf("again: %v after %d calls, want ErrNeedsAttention and no second call", err, c.calls.Load())
	}

	for _, refusal := range []error{
		agentledger.RetryAfter(errors.New("429"), time.Second),
		ledger.NotPerformed(errors.New("host not allowed")),
	} {
		turned := &counter{fn: func(context.Context, ledger.Call) (ledger.Result, error) { return ledger.Result{}, refusal }}
		if _, err := e.Ledger.Do(ctx, a, effect(ledger.Unsafe, "tool/1", `{}`, turned.perform)); !errors.Is(err, refusal) && err == nil {
			t.Fatalf("%v: %v", refusal, err)
		}
		if j := e.Journal(task); len(j) != 1 {
			t.Fatalf("%v left a row: %+v", refusal, j)
		}
	}
	ok := &counter{}
	if _, err := e.Ledger.Do(ctx, a, effect(ledger.Unsafe, "tool/1", `{}`, ok.perform)); err != nil || ok.calls.Load() != 1 {
		t.Fatalf("after the refusals: %v, %d calls", err, ok.calls.Load())
	}
}
