package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/daemon"
	"github.com/agentledger/agentledger/internal/test/testdaemon"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/operator"
	"github.com/agentledger/agentledger/waits"
)

// A steps task waits for a signal holding no lease and no attempt; the
// signal's payload is the step's result, which a later step's template
// reads; a replay waits for nothing; a re-run waits anew.
func TestWaitForASignal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, down := runGateDaemon(t, nil)
	store, ws := claims.New(db), waits.NewStore(db)
	payload := fmt.Sprintf(`{"steps":[{"tool":"wait_for_signal","args":{"signal":"payment.settled","key":"order-7","timeout":"1h"}},
		{"tool":"http_request","args":{"method":"POST","url":%q,"body":{"paid":"${steps.0.body.amount}"}}}]}`, down.URL+"/receipts")
	r, err := store.Enqueue(ctx, claims.EnqueueParams{Kind: "steps", Payload: json.RawMessage(payload), MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	id := r.Task.ID
	task := waitTask(t, store, id, func(t *agentledger.Task) bool { return t.State == agentledger.StateWaiting })
	if task.Attempt != 0 || !strings.Contains(task.WaitReason, "waiting for signal payment.settled key order-7") {
		t.Fatalf("waiting task: attempt %d, reason %q", task.Attempt, task.WaitReason)
	}
	sent, err := ws.Send(ctx, waits.SignalParams{Name: "payment.settled", Key: "order-7", Payload: json.RawMessage(`{"amount":1500}`), SentBy: "test"})
	if err != nil || sent.Woke == nil || sent.Woke.TaskID != id {
		t.Fatalf("send: %+v %v, want it to wake task %d", sent, err, id)
	}
	done := testdaemon.WaitFinished(t, store, id)
	if done.State != agentledger.StateSucceeded || down.Effects() != 1 {
		t.Fatalf("task %s (%s), %d effects; want succeeded, 1", done.State, done.LastError, down.Effects())
	}
	if again, err := ws.Send(ctx, waits.SignalParams{Name: "payment.settled", Key: "order-7", Payload: json.RawMessage(`{"amount":1500}`), SentBy: "test"}); err != nil || !again.Duplicate {
		t.Fatalf("the same signal again: %+v %v, want a duplicate", again, err)
	}

	// A replay: served from the journal, nothing waited for.
	if _, err := operator.New(db).Replay(ctx, "", id); err != nil {
		t.Fatal(err)
	}
	waitTask(t, store, id, func(t *agentledger.Task) bool {
		return t.State == agentledger.StateSucceeded && t.UpdatedAt.After(done.UpdatedAt)
	})
	// A re-run waits anew; a signal sent before its wait is kept for it.
	if _, err := ws.Send(ctx, waits.SignalParams{Name: "payment.settled", Key: "order-7", Payload: json.RawMessage(`{"amount":99}`), SentBy: "test"}); err != nil {
		t.Fatal(err)
	}
	if _, err := operator.New(db).Rerun(ctx, "", id); err != nil {
		t.Fatal(err)
	}
	rerun := waitTask(t, store, id, func(t *agentledger.Task) bool {
		return t.State == agentledger.StateSucceeded && t.Generation == done.Generation+1
	})
	all, err := ws.List(ctx, waits.ListParams{TaskID: id, States: []string{waits.Done}})
	if err != nil || len(all) != 2 || down.Effects() != 2 {
		t.Fatalf("after the re-run (%s): %d waits done, %d effects, %v; want 2, 2", rerun.State, len(all), down.Effects(), err)
	}
}

// A durable timer releases the task and fires on time; a signal wait
// times out and fails its step saying so.
func TestWaitTimerAndTimeout(t *testing.T) {
	t.Parallel()
	db, _ := runGateDaemon(t, nil)
	store := claims.New(db)
	submit := func(payload string) int64 { return submitSteps(t, store, payload) }
	timer := submit(`{"steps":[{"tool":"wait_timer","args":{"for":"1s"}}]}`)
	lonely := submit(`{"steps":[{"tool":"wait_for_signal","args":{"signal":"never","key":"k","timeout":"1s"}}]}`)
	if got := testdaemon.WaitFinished(t, store, timer); got.State != agentledger.StateSucceeded || !strings.Contains(string(got.Result), "fired_at") {
		t.Fatalf("timer task: %s %s %s", got.State, got.Result, got.LastError)
	}
	got := testdaemon.WaitFinished(t, store, lonely)
	if got.State != agentledger.StateDead || !strings.Contains(got.LastError, "timed out: no signal by") {
		t.Fatalf("lonely task: %s %q", got.State, got.LastError)
	}
	// The signal comes late, and is kept; a replay waits again (the
	// timeout changed nothing) and takes it.
	ctx := context.Background()
	if _, err := waits.NewStore(db).Send(ctx, waits.SignalParams{Name: "never", Key: "k", Payload: json.RawMessage(`{"late":true}`), SentBy: "test"}); err != nil {
		t.Fatal(err)
	}
	if _, err := operator.New(db).Replay(ctx, "", lonely); err != nil {
		t.Fatal(err)
	}
	again := waitTask(t, store, lonely, func(t *agentledger.Task) bool { return t.State.Finished() && t.UpdatedAt.After(got.UpdatedAt) })
	if again.State != agentledger.StateSucceeded || !strings.Contains(string(again.Result), `"late": true`) {
		t.Fatalf("the lonely task replayed after its signal came: %s %q %s", again.State, again.LastError, again.Result)
	}
}

// A parent starts three children and waits for them all, receiving their
// results; a failing child fails a parent that says so.
func TestWaitForChildren(t *testing.T) {
	t.Parallel()
	db, _ := runGateDaemon(t, nil)
	store := claims.New(db)
	submit := func(payload string) int64 { return submitSteps(t, store, payload) }
	parent := submit(`{"steps":[{"tool":"create_task","args":{"kind":"echo","payload":{"n":1}}},
		{"tool":"create_task","args":{"kind":"echo","payload":{"n":2}}},
		{"tool":"create_task","args":{"kind":"sleep","payload":{"ms":300}}},
		{"tool":"wait_for_children","args":{}}]}`)
	got := testdaemon.WaitFinished(t, store, parent)
	if got.State != agentledger.StateSucceeded {
		t.Fatalf("parent: %s %q", got.State, got.LastError)
	}
	if strings.Count(string(got.Result), `"state": "succeeded"`) != 3 || !strings.Contains(string(got.Result), `"slept_ms": 300`) {
		t.Fatalf("parent's result lacks its children: %s", got.Result)
	}

	failing := submit(`{"steps":[{"tool":"create_task","args":{"kind":"steps","payload":{"steps":[{"tool":"wait_for_signal","args":{"signal":"x","key":"y","timeout":"1s"}}]}}},
		{"tool":"wait_for_children","args":{"on_failure":"fail"}}]}`)
	dead := testdaemon.WaitFinished(t, store, failing)
	if dead.State != agentledger.StateDead || !strings.Contains(dead.LastError, "ended dead") {
		t.Fatalf("parent of a failing child: %s %q", dead.State, dead.LastError)
	}

	// Once the child is fixed (re-run, and its signal sent), a replay of
	// the parent looks at its children again, and creates none: the
	// failed wait changed nothing, so the replay tries it once more.
	ctx := context.Background()
	op, ws := operator.New(db), waits.NewStore(db)
	var child int64
	if err := db.QueryRow(ctx, `SELECT id FROM tasks WHERE parent_id = $1`, failing).Scan(&child); err != nil {
		t.Fatal(err)
	}
	if _, err := op.Rerun(ctx, "", child); err != nil {
		t.Fatal(err)
	}
	waitTask(t, store, child, func(t *agentledger.Task) bool { return t.State == agentledger.StateWaiting })
	if _, err := ws.Send(ctx, waits.SignalParams{Name: "x", Key: "y", Payload: json.RawMessage(`{}`), SentBy: "test"}); err != nil {
		t.Fatal(err)
	}
	if got := testdaemon.WaitFinished(t, store, child); got.State != agentledger.StateSucceeded {
		t.Fatalf("the re-run child: %s %q", got.State, got.LastError)
	}
	if _, err := op.Replay(ctx, "", failing); err != nil {
		t.Fatal(err)
	}
	replayed := waitTask(t, store, failing, func(t *agentledger.Task) bool {
		return t.State.Finished() && t.UpdatedAt.After(dead.UpdatedAt)
	})
	var children int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM tasks WHERE parent_id = $1`, failing).Scan(&children); err != nil {
		t.Fatal(err)
	}
	if replayed.State != agentledger.StateSucceeded || children != 1 {
		t.Fatalf("the parent replayed once its child was fixed: %s %q, %d children; want succeeded, 1", replayed.State, replayed.LastError, children)
	}
	// Each names the other for an operator.
	pd, err := op.Show(ctx, "", failing)
	if err != nil || pd.Parent != nil || len(pd.Children) != 1 || pd.ChildCount != 1 || pd.Children[0].ID != child || pd.Children[0].State != agentledger.StateSucceeded {
		t.Fatalf("the parent's family: %+v %+v %v", pd.Parent, pd.Children, err)
	}
	cd, err := op.Show(ctx, "", child)
	if err != nil || cd.Parent == nil || cd.Parent.ID != failing || len(cd.Children) != 0 {
		t.Fatalf("the child's family: %+v %+v %v", cd.Parent, cd.Children, err)
	}
}

// A timer fires at its deadline, not at the worker's next poll: with a poll
// an hour apart, a 1s timer's task still finishes (the pool that parked it
// comes back at its deadline).
func TestTimerFiresWithoutThePoll(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := runGateDaemon(t, func(c *daemon.Config, _ string) { c.Worker.PollInterval = time.Hour })
	store := claims.New(db)
	r, err := store.Enqueue(ctx, claims.EnqueueParams{Kind: "steps", Payload: json.RawMessage(`{"steps":[{"tool":"wait_timer","args":{"for":"1s"}}]}`)})
	if err != nil {
		t.Fatal(err)
	}
	if got := testdaemon.WaitFinished(t, store, r.Task.ID); got.State != agentledger.StateSucceeded {
		t.Fatalf("timer task: %s %q", got.State, got.LastError)
	}
}

// A Go kind waits with waits.ForSignal: the task parks, and once the
// signal comes the handler runs again, the wait served from the ledger.
func TestGoKindWaitsForASignal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.URL(t)
	type order struct {
		ID string `json:"id"`
	}
	d := daemon.New(daemon.Config{
		Database:    daemon.Database{URL: url},
		Worker:      daemon.Worker{PollInterval: 50 * time.Millisecond},
		Maintenance: daemon.Maintenance{NoCron: true, NoJanitor: true},
		Logger:      quiet(),
		Stdout:      io.Discard,
	})
	var runs atomic.Int32
	err := d.RegisterKind("settle", daemon.Kind(func(ctx context.Context, t *agentledger.Task, o order) (json.RawMessage, error) {
		runs.Add(1)
		return waits.ForSignal(ctx, t, "paid", "payment.settled", o.ID, time.Hour)
	}))
	if err != nil {
		t.Fatal(err)
	}
	testdaemon.Run(t, d)
	db := testdb.Open(t, url)
	store := claims.New(db)
	r, err := store.Enqueue(ctx, claims.EnqueueParams{Kind: "settle", Payload: json.RawMessage(`{"id":"order-5"}`)})
	if err != nil {
		t.Fatal(err)
	}
	waitTask(t, store, r.Task.ID, func(t *agentledger.Task) bool { return t.State == agentledger.StateWaiting })
	if _, err := waits.NewStore(db).Send(ctx, waits.SignalParams{Name: "payment.settled", Key: "order-5", Payload: json.RawMessage(`{"ok":true}`), SentBy: "test"}); err != nil {
		t.Fatal(err)
	}
	got := testdaemon.WaitFinished(t, store, r.Task.ID)
	if got.State != agentledger.StateSucceeded || !strings.Contains(string(got.Result), `"ok"`) || runs.Load() != 2 {
		t.Fatalf("task %s result %s after %d runs; want succeeded with the payload after 2", got.State, got.Result, runs.Load())
	}
}

// submitSteps queues a steps task of payload that is tried once.
func submitSteps(t *testing.T, store *claims.Store, payload string) int64 {
	t.Helper()
	r, err := store.Enqueue(context.Background(), claims.EnqueueParams{Kind: "steps", Payload: json.RawMessage(payload), MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	return r.Task.ID
}

// Many tasks reaching their waits at once on a small pool all park: a wait
// call holds no transaction while it looks at its wait, so it needs one
// connection, not two (a pool held entirely by calls each waiting for a
// second one would stall every task).
func TestManyWaitsOnASmallPool(t *testing.T) {
	t.Parallel()
	db, _ := runGateDaemon(t, func(c *daemon.Config, _ string) {
		c.Database.MaxConns = 4
		c.Worker.Concurrency = 40
	})
	store := claims.New(db)
	var ids []int64
	for i := range 40 {
		ids = append(ids, submitSteps(t, store, fmt.Sprintf(`{"steps":[{"tool":"wait_for_signal","args":{"signal":"s","key":"k-%d","timeout":"1h"}}]}`, i)))
	}
	for _, id := range ids {
		waitTask(t, store, id, func(t *agentledger.Task) bool { return t.State == agentledger.StateWaiting })
	}
}

// A task cancelled while it waited, replayed, waits again: its cancelled
// wait is not what its replay finds. The cancelled wait is kept, replaced,
// with who ended it: listed with the task's waits, and found by its id.
func TestReplayOfATaskCancelledWhileWaiting(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := runGateDaemon(t, nil)
	store, ws, op := claims.New(db), waits.NewStore(db), operator.New(db)
	id := submitSteps(t, store, `{"steps":[{"tool":"wait_for_signal","args":{"signal":"paid","key":"o-1","timeout":"1h"}}]}`)
	waitTask(t, store, id, func(t *agentledger.Task) bool { return t.State == agentledger.StateWaiting })
	if _, err := op.Cancel(ctx, "", id); err != nil {
		t.Fatal(err)
	}
	cancelled := testdaemon.WaitFinished(t, store, id)
	if cancelled.State != agentledger.StateCancelled {
		t.Fatalf("cancelled while waiting: %s", cancelled.State)
	}
	if _, err := op.Replay(ctx, "", id); err != nil {
		t.Fatal(err)
	}
	waitTask(t, store, id, func(t *agentledger.Task) bool { return t.State == agentledger.StateWaiting })
	if _, err := ws.Send(ctx, waits.SignalParams{Name: "paid", Key: "o-1", Payload: json.RawMessage(`{"ok":1}`), SentBy: "test"}); err != nil {
		t.Fatal(err)
	}
	if got := testdaemon.WaitFinished(t, store, id); got.State != agentledger.StateSucceeded {
		t.Fatalf("the replay: %s %q", got.State, got.LastError)
	}
	all, err := ws.List(ctx, waits.ListParams{TaskID: id, States: []string{waits.Waiting, waits.Done, waits.TimedOut, waits.Ended, waits.Cancelled}})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all[0].State != waits.Done || all[0].ReplacedAt != nil ||
		all[1].State != waits.Cancelled || all[1].ReplacedAt == nil || all[1].EndedBy != "operator" || all[1].Step != all[0].Step {
		t.Fatalf("the task's waits %+v, want the replay's, done, then the cancelled one it replaced, by the operator", all)
	}
	if got, err := ws.Get(ctx, "", all[1].ID); err != nil || got.ReplacedAt == nil || got.EndReason != all[1].EndReason {
		t.Fatalf("the replaced wait by its id: %+v, %v", got, err)
	}
}
