package ledger_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/ledger"
)

// unknownUnsafe leaves an unsafe effect of unknown outcome and its task
// parked, as a worker would.
func unknownUnsafe(t *testing.T, e *env, c *counter) (ledger.Attempt, ledger.Effect) {
	t.Helper()
	ctx := context.Background()
	e.task()
	a, _ := e.claim("a")
	eff := effect(ledger.Unsafe, "tool/0", `{"wire":100}`, c.perform)
	c.fn = func(context.Context, ledger.Call) (ledger.Result, error) {
		if c.calls.Load() == 1 {
			e.expireAndReclaim("b")
		}
		return ledger.Result{Status: 200}, nil
	}
	if _, err := e.Ledger.Do(ctx, a, eff); !errors.Is(err, agentledger.ErrLeaseLost) {
		t.Fatal(err)
	}
	b := e.reclaimed(a)
	if _, err := e.Ledger.Do(ctx, b, eff); !errors.Is(err, ledger.ErrNeedsAttention) {
		t.Fatal(err)
	}
	if err := e.Claims.NeedsAttention(ctx, leaseOf(b), "unknown effect"); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.Claims.Get(ctx, "", b.TaskID); got.State != agentledger.StateNeedsAttention {
		t.Fatalf("task %s", got.State)
	}
	return b, eff
}

func TestResolveRetryPerformsOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	c := &counter{}
	b, eff := unknownUnsafe(t, e, c)
	key := ledger.EffectKey(b.Tenant, b.TaskID, b.Generation, eff.StepPath, eff.Operation)

	if err := e.Ledger.Resolve(ctx, b.Tenant, eff.Operation, key, ledger.Resolution{Retry: true}); !errors.Is(err, agentledger.ErrInvalid) {
		t.Fatalf("no note: %v", err)
	}
	if err := e.Ledger.Resolve(ctx, b.Tenant, eff.Operation, key, ledger.Resolution{Retry: true, Note: "bank says no such wire"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Operator.Replay(ctx, "", b.TaskID); err != nil {
		t.Fatal(err)
	}
	r, _ := e.claim("c")
	if _, err := e.Ledger.Do(ctx, r, eff); err != nil || c.calls.Load() != 2 {
		t.Fatalf("after retry resolution: %v, performed %d", err, c.calls.Load())
	}
	if res, err := e.Ledger.Do(ctx, r, eff); err != nil || !res.Replayed || res.Resolved || c.calls.Load() != 2 {
		t.Fatalf("then served: %+v %v, performed %d; want the performance's answer, not marked resolved", res, err, c.calls.Load())
	}
	if err := e.Ledger.Resolve(ctx, b.Tenant, eff.Operation, key, ledger.Resolution{Retry: true, Note: "x"}); !errors.Is(err, agentledger.ErrNotFound) {
		t.Fatalf("resolving a completed effect: %v", err)
	}
}

func TestResolveDoneServesWithoutPerforming(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	c := &counter{}
	b, eff := unknownUnsafe(t, e, c)
	key := ledger.EffectKey(b.Tenant, b.TaskID, b.Generation, eff.StepPath, eff.Operation)
	if err := e.Ledger.Resolve(ctx, b.Tenant, eff.Operation, key, ledger.Resolution{Done: true, Note: "wire seen in bank portal",
		Result: &ledger.Result{Status: 200, ExternalRef: "wire-77"}}); err != nil {
		t.Fatal(err)
	}
	e.Operator.Replay(ctx, "", b.TaskID)
	r, _ := e.claim("c")
	res, err := e.Ledger.Do(ctx, r, eff)
	if err != nil || !res.Replayed || !res.Resolved || res.Status != 200 || c.calls.Load() != 1 {
		t.Fatalf("%+v %v performed %d; want the operator's result served, marked resolved", res, err, c.calls.Load())
	}
	j, _ := e.Ledger.Journal(ctx, r.TaskID, r.Generation)
	if j[0].Note != "wire seen in bank portal" || j[0].Performed != 1 {
		t.Fatalf("journal %+v", j[0])
	}
}

// Drill 7 and I7: rows outlive the retention window only while their task is
// unfinished; after expiry, the same effect presented again is a new intent
// and is performed again.
func TestExpiryAndLateRetry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	c := &counter{}
	eff := effect(ledger.Keyed, "tool/0", `{}`, c.perform)

	finished := e.task()
	a, _ := e.claim("w")
	if _, err := e.Ledger.Do(ctx, a, eff); err != nil {
		t.Fatal(err)
	}
	e.Claims.Succeed(ctx, leaseOf(a), nil)
	running := e.task()
	r, _ := e.claim("w")
	if _, err := e.Ledger.Do(ctx, r, eff); err != nil {
		t.Fatal(err)
	}
	// Both rows are old; only the finished task's is past its window.
	age := func(id int64) {
		if _, err := e.DB.Exec(ctx, `UPDATE ledger SET updated_at = now() - interval '8 days' WHERE task_id = $1`, id); err != nil {
			t.Fatal(err)
		}
		if _, err := e.DB.Exec(ctx, `UPDATE tasks SET finished_at = now() - interval '8 days' WHERE id = $1 AND finished_at IS NOT NULL`, id); err != nil {
			t.Fatal(err)
		}
	}
	age(finished)
	age(running)
	short := ledger.Retention{PerOperation: map[string]time.Duration{"test.op": 30 * 24 * time.Hour}}
	if n, err := e.Ledger.Expire(ctx, claims.LedgerRetention{}, short, 1); err != nil || n != 0 {
		t.Fatalf("a 30-day window expired %d rows (%v)", n, err)
	}
	if n, err := e.Ledger.Expire(ctx, claims.LedgerRetention{}, ledger.Retention{}, 1); err != nil || n != 1 {
		t.Fatalf("expired %d rows (%v), want 1", n, err)
	}
	if j, _ := e.Ledger.Journal(ctx, running, 1); len(j) != 1 {
		t.Fatal("the running task's row expired")
	}
	// The late retry: a replay would repeat the expired effect, so it is
	// refused; re-running the task as a new intent performs it again.
	if _, err := e.Operator.Replay(ctx, "", finished); !errors.Is(err, agentledger.ErrConflict) {
		t.Fatalf("replay after expiry: %v, want ErrConflict", err)
	}
	if _, err := e.Operator.Rerun(ctx, "", finished); err != nil {
		t.Fatal(err)
	}
	late, _ := e.claim("w")
	res, err := e.Ledger.Do(ctx, late, eff)
	if err != nil || res.Replayed || c.calls.Load() != 3 || late.Generation != 2 {
		t.Fatalf("late retry: %+v %v performed %d, want performed again in generation 2", res, err, c.calls.Load())
	}
}

// The record of a call that could not be built keeps the retention of
// the operation it would have been recorded under, and an operator's
// search by that operation finds it.
func TestUnbuiltRecordKeepsItsOperation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	id := e.task()
	a, _ := e.claim("w")
	if out, err := e.Ledger.Unbuilt(ctx, a, "compensate/tool/0", "test.op", "no grant"); err != nil || out != ledger.UnbuiltRecorded {
		t.Fatalf("unbuilt: %v %v", out, err)
	}
	e.Claims.Succeed(ctx, leaseOf(a), nil)
	if _, err := e.DB.Exec(ctx, `UPDATE ledger SET updated_at = now() - interval '8 days' WHERE task_id = $1`, id); err != nil {
		t.Fatal(err)
	}
	if _, err := e.DB.Exec(ctx, `UPDATE tasks SET finished_at = now() - interval '8 days' WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	got, err := e.Ledger.Find(ctx, ledger.FindParams{Operation: "test.op"})
	if err != nil || len(got) != 1 || got[0].Operation != ledger.UnbuiltPrefix+"test.op" {
		t.Fatalf("find by its operation: %+v %v, want the unbuilt record", got, err)
	}
	long := ledger.Retention{PerOperation: map[string]time.Duration{"test.op": 30 * 24 * time.Hour}}
	if n, err := e.Ledger.Expire(ctx, claims.LedgerRetention{}, long, 10); err != nil || n != 0 {
		t.Fatalf("a 30-day window for its operation expired %d rows (%v), want none", n, err)
	}
	if n, err := e.Ledger.Expire(ctx, claims.LedgerRetention{}, ledger.Retention{}, 10); err != nil || n != 1 {
		t.Fatalf("the default window expired %d rows (%v), want 1", n, err)
	}
}

// Find looks effects up by key prefix, task and operation.
func TestFind(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	e.task()
	a, _ := e.claim("w")
	c := &counter{}
	if _, err := e.Ledger.Do(ctx, a, effect(ledger.Keyed, "tool/0", `{}`, c.perform)); err != nil {
		t.Fatal(err)
	}
	key := ledger.EffectKey(a.Tenant, a.TaskID, a.Generation, "tool/0", "test.op")
	for _, p := range []ledger.FindParams{{Key: key[:12]}, {TaskID: a.TaskID}, {Operation: "test.op", Tenant: a.Tenant}} {
		got, err := e.Ledger.Find(ctx, p)
		if err != nil || len(got) != 1 || got[0].Key != key || got[0].TaskID != a.TaskID || got[0].Generation != a.Generation {
			t.Fatalf("%+v: %+v %v", p, got, err)
		}
	}
	if got, err := e.Ledger.Find(ctx, ledger.FindParams{Key: "ffffffffffff"}); err != nil || len(got) != 0 {
		t.Fatalf("unknown key: %+v %v", got, err)
	}
	for _, p := range []ledger.FindParams{{}, {Key: "ab"}, {TaskID: 1, Limit: 5000}} {
		if _, err := e.Ledger.Find(ctx, p); !errors.Is(err, agentledger.ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", p, err)
		}
	}
}

// A failed reconcilable effect, reopened, is looked up before it is
// performed again: one that had in fact landed is adopted, not performed
// twice. A failed keyed effect is performed again; an unsafe one is never
// reopened.
func TestReopenFailedEffect(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	e.task()
	a, _ := e.claim("a")
	refused := agentledger.Permanent(errors.New("slack: invalid_auth"))
	fail := func(context.Context, ledger.Call) (ledger.Result, error) { return ledger.Result{}, refused }
	landed := 0
	post := effect(ledger.Reconcilable, "notify/ops", `{"rule":"ops"}`, fail)
	post.Reconcile = func(context.Context, ledger.Call) (ledger.Result, bool, error) {
		return ledger.Result{ExternalRef: "C1/1.000001"}, landed > 0, nil
	}
	update := effect(ledger.Keyed, "notify/ops/7", `{}`, fail)
	unsafe := effect(ledger.Unsafe, "tool/0", `{}`, fail)
	for _, eff := range []ledger.Effect{post, update, unsafe} {
		if _, err := e.Ledger.Do(ctx, a, eff); !failed(err) {
			t.Fatalf("%s: %v", eff.StepPath, err)
		}
	}
	key := func(eff ledger.Effect) string {
		return ledger.EffectKey(a.Tenant, a.TaskID, a.Generation, eff.StepPath, eff.Operation)
	}
	if _, err := e.Ledger.Reopen(ctx, a.Tenant, post.Operation, key(post), " "); !errors.Is(err, agentledger.ErrInvalid) {
		t.Fatalf("no note: %v", err)
	}
	for _, eff := range []ledger.Effect{post, update, unsafe} {
		ok, err := e.Ledger.Reopen(ctx, a.Tenant, eff.Operation, key(eff), "token fixed")
		if err != nil || ok != (eff.Class != ledger.Unsafe) {
			t.Fatalf("reopen %s: %v %v", eff.Class, ok, err)
		}
	}
	j := e.Journal(&agentledger.Task{ID: a.TaskID, Generation: a.Generation})
	if j[0].State != ledger.StatePending || j[0].Error != "" || j[0].Note != "token fixed (it had failed: slack: invalid_auth)" ||
		j[2].State != ledger.StateFailed {
		t.Fatalf("journal after reopening: %+v", j)
	}
	if ok, err := e.Ledger.Reopen(ctx, a.Tenant, post.Operation, key(post), "again"); ok || err != nil {
		t.Fatalf("reopening a pending effect: %v %v", ok, err)
	}

	// The post had landed: it is adopted, not performed.
	landed = 1
	c := &counter{}
	post.Perform, update.Perform = c.perform, c.perform
	res, err := e.Ledger.Do(ctx, a, post)
	if err != nil || res.ExternalRef != "C1/1.000001" || c.calls.Load() != 0 {
		t.Fatalf("reopened post: %+v %v, performed %d", res, err, c.calls.Load())
	}
	if _, err := e.Ledger.Do(ctx, a, update); err != nil || c.calls.Load() != 1 {
		t.Fatalf("reopened update: %v, performed %d", err, c.calls.Load())
	}
	if _, err := e.Ledger.Do(ctx, a, unsafe); !failed(err) || c.calls.Load() != 1 {
		t.Fatalf("unsafe, still failed: %v", err)
	}
}

// failed reports whether err is a recorded failure.
func failed(err error) bool {
	var f *ledger.FailedError
	return errors.As(err, &f)
}

// A failed reconcilable effect reopened with another request is performed
// under its key with that request: the old request is now a key reuse. A
// keyed effect, or one that did not fail, is not reopened so.
func TestReopenAsAnotherRequest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	e.task()
	a, _ := e.claim("a")
	refused := agentledger.Permanent(errors.New("slack: channel_not_found"))
	fail := func(context.Context, ledger.Call) (ledger.Result, error) { return ledger.Result{}, refused }
	post := effect(ledger.Reconcilable, "notify/ops", `{"channel":"opz","rule":"ops"}`, fail)
	post.Reconcile = func(context.Context, ledger.Call) (ledger.Result, bool, error) { return ledger.Result{}, false, nil }
	keyed := effect(ledger.Keyed, "notify/ops/7", `{}`, fail)
	for _, eff := range []ledger.Effect{post, keyed} {
		if _, err := e.Ledger.Do(ctx, a, eff); !failed(err) {
			t.Fatalf("%s: %v", eff.StepPath, err)
		}
	}
	key := func(eff ledger.Effect) string {
		return ledger.EffectKey(a.Tenant, a.TaskID, a.Generation, eff.StepPath, eff.Operation)
	}
	moved := []byte(`{"channel":"ops","rule":"ops"}`)
	if _, err := e.Ledger.ReopenAs(ctx, a.Tenant, post.Operation, key(post), moved, ""); !errors.Is(err, agentledger.ErrInvalid) {
		t.Fatalf("no note: %v", err)
	}
	if ok, err := e.Ledger.ReopenAs(ctx, a.Tenant, keyed.Operation, key(keyed), moved, "moved"); ok || err != nil {
		t.Fatalf("a keyed effect reopened with another request: %v %v", ok, err)
	}
	if ok, err := e.Ledger.ReopenAs(ctx, a.Tenant, post.Operation, key(post), moved, "channel fixed"); !ok || err != nil {
		t.Fatalf("reopen as: %v %v", ok, err)
	}
	if ok, err := e.Ledger.ReopenAs(ctx, a.Tenant, post.Operation, key(post), moved, "again"); ok || err != nil {
		t.Fatalf("reopening a pending effect: %v %v", ok, err)
	}
	old := post
	c := &counter{}
	post.Perform, old.Perform = c.perform, c.perform
	post.Request = moved
	if _, err := e.Ledger.Do(ctx, a, old); !errors.Is(err, agentledger.ErrKeyReuse) || c.calls.Load() != 0 {
		t.Fatalf("the old request after the move: %v, performed %d; want a key reuse", err, c.calls.Load())
	}
	if _, err := e.Ledger.Do(ctx, a, post); err != nil || c.calls.Load() != 1 {
		t.Fatalf("the moved request: %v, performed %d", err, c.calls.Load())
	}
}
