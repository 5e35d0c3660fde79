package tui

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testenv"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/tools"
)

// sagaDB makes a database holding one succeeded steps task whose steps 0
// and 1 completed and declared compensations (step 2 did not), and returns
// the DBStore on it.
func sagaDB(t *testing.T) (*DBStore, *claims.Store) {
	t.Helper()
	ctx := context.Background()
	e := testenv.NewSmallIDs(t)
	task := e.Enqueue(claims.EnqueueParams{Tenant: "acme", Kind: "steps", Payload: json.RawMessage(`{"steps": [
		{"tool": "http_request", "args": {}, "compensate": {"tool": "http_request", "args": {"refund": "${self.body.id}"}}},
		{"tool": "http_request", "args": {}, "compensate": {"tool": "notify", "args": {"text": "released"}}},
		{"tool": "notify", "args": {"text": "booked"}}]}`)})
	running := e.Claim("worker-a")
	undoers := []json.RawMessage{json.RawMessage(`{"tool":"http_request","args":{"method":"POST",` +
		`"url":"https://billing.example/refunds","body":{"charge":"${self.body.id}"}}}`),
		json.RawMessage(`{"tool":"notify","args":{"text":"released"}}`), nil}
	for i, body := range []string{`{"id":"ch_1"}`, `{"id":"rm_2"}`, `{"ts":"1.2"}`} {
		// Each completes a second after the one before: newest first is
		// a fixed order.
		e.Advance(time.Second)
		if _, err := e.Ledger.Do(ctx, tools.AttemptOf(running), ledger.Effect{Operation: "http_request",
			StepPath: "tool/" + strconv.Itoa(i), Class: ledger.Keyed, Request: json.RawMessage(`{}`), Compensate: undoers[i],
			Perform: func(context.Context, ledger.Call) (ledger.Result, error) {
				return ledger.Result{Status: 200, Body: json.RawMessage(body)}, nil
			}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Claims.Succeed(ctx, claims.LeaseOf(running), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e.DB.Exec(ctx, `UPDATE tasks SET created_at = $1::timestamptz - interval '10 minutes', run_at = $1::timestamptz - interval '10 minutes',
		updated_at = $1::timestamptz - interval '1 minute', finished_at = $1::timestamptz - interval '1 minute' WHERE id = $2`, epoch, task.ID); err != nil {
		t.Fatal(err)
	}
	s := NewDBStore(e.DB)
	s.Operator.PinClock(func() time.Time { return epoch })
	return s, claims.New(e.DB)
}

// u on a succeeded saga previews the effects to undo, newest first, with
// the call that undoes each; y starts the compensation phase.
func TestConsoleCompensate(t *testing.T) {
	store, tasks := sagaDB(t)
	store.User = "alice"
	tm := startConsole(t, store)
	waitFor(t, tm, "succeeded", "page 1 · 1 task", noLiveWorkers)
	press(tm, "u")
	waitFor(t, tm, "Compensate task 1?", "undoes 2 effects, newest first", "tool/1", "tool/0")
	press(tm, "y")
	// The counts and the page are read apart: the row is waited for too.
	waitFor(t, tm, "task 1 is compensating: a worker undoes its effects, newest first", "undo 1", "compensating    acme")
	golden.RequireEqual(t, []byte(finish(t, tm)))

	got, err := tasks.Get(context.Background(), "", 1)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != agentledger.StateCompensating || got.Compensation != "operator" {
		t.Errorf("after the compensate: %s (%q)", got.State, got.Compensation)
	}
	// The console's user asked, as its cancels record it.
	if by, err := store.Operator.CompensationRequester(context.Background(), "", 1); err != nil || by != "operator:alice" {
		t.Errorf("asked by %q (%v), want operator:alice", by, err)
	}
}

// The dialog lists the completed compensable effects newest first, with
// the call that undoes each (its ${self…} filled in from the effect's
// result), and not the step that declared no compensation.
func TestConsoleCompensatePreview(t *testing.T) {
	store, _ := sagaDB(t)
	tm := startConsole(t, store)
	waitFor(t, tm, "succeeded", "page 1 · 1 task", noLiveWorkers)
	press(tm, "u")
	waitFor(t, tm, "Compensate task 1?", "undoes 2 effects, newest first", `"charge":"ch_1"`)
	golden.RequireEqual(t, []byte(finish(t, tm)))
}

// v on a task parked on a compensation that failed for good resolves it
// as done (the operator undid the effect by hand): a note is required,
// and the task goes on undoing the rest.
func TestResolveFailedCompensation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, tasks := sagaDB(t)
	if _, err := store.Operator.Compensate(ctx, "", 1); err != nil {
		t.Fatal(err)
	}
	undo, err := tasks.Claim(ctx, claims.ClaimParams{Queue: claims.DefaultQueue, Worker: "worker-b", Limit: 1, Lease: time.Minute})
	if err != nil || len(undo) != 1 {
		t.Fatalf("claim of the compensation: %v %v", undo, err)
	}
	_, err = ledger.New(store.db).Do(ctx, tools.AttemptOf(undo[0]), ledger.Effect{Operation: "http_request", StepPath: "compensate/tool/1",
		Class: ledger.Keyed, Request: json.RawMessage(`{}`),
		Perform: func(context.Context, ledger.Call) (ledger.Result, error) {
			return ledger.Result{}, agentledger.Permanent(errors.New("422: no such reservation"))
		}})
	if err == nil {
		t.Fatal("the refused compensation succeeded")
	}
	if _, err := tasks.Fail(ctx, claims.Failure{Lease: claims.LeaseOf(undo[0]), Error: err.Error(), Final: true}); err != nil {
		t.Fatal(err)
	}
	d := newDriver(t, store, Options{}, 100, 30)
	d.keys("enter")
	wantStatus(t, d, "v resolve") // the footer offers it
	d.keys("v")
	wantStatus(t, d, "Resolve compensation compensate/tool/1 of task 1 as done")
	wantStatus(t, d, "422: no such reservation")
	d.keys("tab") // no toggle: a compensation is resolved as done only
	d.keys("enter")
	wantStatus(t, d, "a note is required")
	d.typeText("released by hand in the warehouse system")
	d.keys("enter")
	wantStatus(t, d, "effect compensate/tool/1 of task 1 marked done; the task went back to compensating")
	j, err := ledger.New(store.db).Journal(ctx, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range j {
		if e.StepPath == "compensate/tool/1" && (e.State != ledger.StateCompleted || e.Note != "released by hand in the warehouse system") {
			t.Errorf("the compensation after resolve: %+v", e)
		}
	}
}
