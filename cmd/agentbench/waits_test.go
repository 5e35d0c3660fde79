package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/waits"
)

// The waiting fixture leaves tasks as the wait tools do: waiting, each with
// its wait recorded and the reason waits.Describe gives, alternating
// signal and timer when mixed; a signal for one of them wakes it.
func TestWaitsFixture(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	last, err := insertWaits(ctx, db, 4, waitingMixed, idleSignal)
	if err != nil {
		t.Fatal(err)
	}
	ws := waits.NewStore(db)
	all, err := ws.List(ctx, waits.ListParams{})
	if err != nil || len(all) != 4 {
		t.Fatalf("waiting waits: %d, %v; want 4", len(all), err)
	}
	kinds := map[string]int{}
	store := claims.New(db)
	for _, w := range all {
		kinds[w.Kind]++
		task, err := store.Get(ctx, "", w.TaskID)
		if err != nil {
			t.Fatal(err)
		}
		if task.State != "waiting" || task.Attempt != 0 || task.WaitReason != waits.Describe(w) || !task.RunAt.Equal(w.Deadline) {
			t.Errorf("task %d: %s attempt %d run_at %s reason %q; want waiting, attempt 0, run_at %s, reason %q",
				task.ID, task.State, task.Attempt, task.RunAt, task.WaitReason, w.Deadline, waits.Describe(w))
		}
		if w.TaskID > last {
			t.Errorf("wait %d's task %d is above the returned highest id %d", w.ID, w.TaskID, last)
		}
	}
	if kinds[waits.KindSignal] != 2 || kinds[waits.KindTimer] != 2 {
		t.Fatalf("kinds %v, want 2 signal and 2 timer", kinds)
	}
	sent, err := ws.Send(ctx, waits.SignalParams{Name: idleSignal, Key: "idle-1", Payload: json.RawMessage(`{}`), SentBy: "test"})
	if err != nil || sent.Woke == nil {
		t.Fatalf("a signal for idle-1: %+v %v; want it to wake its waiter", sent, err)
	}
	if task, err := store.Get(ctx, "", sent.Woke.TaskID); err != nil || task.State != "queued" {
		t.Fatalf("the woken task: %v %v; want queued", task.State, err)
	}
}

// Every signalled task makes its one effect (the command fails otherwise).
func TestSignalsSmoke(t *testing.T) {
	t.Parallel()
	out := runBench(t, "signals", "--database-url", testdb.URL(t), "--signals", "20", "--waiting", "50", "--rate", "200",
		"--concurrency", "10", "--run-timeout", "1m")
	rows := dataRows(out)
	if len(rows) != 1 {
		t.Fatalf("want one row:\n%s", out)
	}
	if f := strings.Fields(rows[0]); f[0] != "20" || f[1] != "70" || f[2] != "20" {
		t.Fatalf("row %q: want 20 signals, 70 waiting, 20 effects", rows[0])
	}
}

// Every timer fires once, after it was due (the command fails otherwise).
func TestTimersSmoke(t *testing.T) {
	t.Parallel()
	out := runBench(t, "timers", "--database-url", testdb.URL(t), "--rate", "50", "--duration", "1s", "--lead", "5s",
		"--concurrency", "10", "--poll-interval", "100ms")
	rows := dataRows(out)
	if len(rows) != 1 {
		t.Fatalf("want one row:\n%s", out)
	}
	if f := strings.Fields(rows[0]); f[0] != "50" || f[2] != "50" || strings.HasPrefix(f[4], "-") {
		t.Fatalf("row %q: want 50 timers, 50 fired, lateness not negative", rows[0])
	}
}

// Tasks waiting on signals and timers beside the burn-down are left
// waiting: the run's tasks alone are burnt down; so with --reset truncate,
// which must empty waits with tasks.
func TestThroughputWaitingKindsSmoke(t *testing.T) {
	t.Parallel()
	url := testdb.URL(t)
	for _, kind := range []string{waitingSignal, waitingTimer, waitingMixed} {
		for _, reset := range []string{"template", "truncate"} {
			out := runBench(t, "throughput", "--database-url", url, "--reset", reset, "--tasks", "200", "--waiting", "300",
				"--waiting-kind", kind, "--pools", "1", "--concurrency", "50", "--batch", "50", "--run-timeout", "1m")
			if rows := dataRows(out); len(rows) != 1 || strings.Fields(rows[0])[3] != "200" {
				t.Fatalf("%s, %s: want one row of 200 tasks:\n%s", kind, reset, out)
			}
		}
	}
	var out, errOut strings.Builder
	if err := run(context.Background(), []string{"throughput", "--waiting-kind", "forever"}, &out, &errOut); err == nil ||
		!strings.Contains(err.Error(), `--waiting-kind "forever"`) {
		t.Errorf("--waiting-kind forever: %v", err)
	}
}
