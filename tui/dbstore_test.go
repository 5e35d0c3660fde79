package tui

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/ledger"
)

// These tests drive the console's keys against a real database (seedDB)
// without a terminal.

func getTask(t *testing.T, s *seeded, id int64) *agentledger.Task {
	t.Helper()
	task, err := s.Claims.Get(context.Background(), "", id)
	if err != nil {
		t.Fatal(err)
	}
	return task
}

func wantStatus(t *testing.T, d *driver, text string) {
	t.Helper()
	if v := d.view(); !strings.Contains(v, text) {
		t.Fatalf("the screen does not say %q:\n%s", text, v)
	}
}

func TestResolveUnknownEffect(t *testing.T) {
	t.Parallel()
	s := seedDB(t)
	d := newDriver(t, s, Options{}, 100, 30)
	d.keys("enter") // task 4, the newest
	d.keys("tab", "tab")
	wantStatus(t, d, "tool/0 unsafe_http unsafe unknown")
	d.keys("v")
	wantStatus(t, d, "Resolve effect tool/0 of task 4")
	// The ledger recorded the call's answer (a reset connection): the
	// dialog says so, not that the attempt died before recording.
	wantStatus(t, d, "recorded an answer that does not say whether it took")
	wantStatus(t, d, "the call's outcome is unknown (connection reset)")
	if v := d.view(); strings.Contains(v, "died after performing it") {
		t.Errorf("the dialog says the attempt died:\n%s", v)
	}
	d.keys("enter") // no note yet
	wantStatus(t, d, "a note is required")
	d.typeText("wire 77 seen in the bank portal")
	d.keys("enter")
	wantStatus(t, d, "effect tool/0 of task 4 marked done; the task went back to queued")
	j, err := s.Ledger.Journal(context.Background(), 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(j) != 1 || j[0].State != ledger.StateCompleted || j[0].Note != "wire 77 seen in the bank portal" {
		t.Errorf("journal after resolve: %+v", j)
	}
	// The task view shows the journal as it now stands.
	d.keys("enter")
	wantStatus(t, d, "note: wire 77 seen in the bank portal")
	wantStatus(t, d, "Task 4  queued")
}

func TestResolveAllowRetry(t *testing.T) {
	t.Parallel()
	s := seedDB(t)
	d := newDriver(t, s, Options{}, 100, 30)
	d.keys("enter", "v", "tab") // task 4; allow retry
	d.typeText("no wire in the bank portal")
	d.keys("enter")
	wantStatus(t, d, "effect tool/0 of task 4 allowed one more performance; the task went back to queued")
}

func TestCancelRetryRerun(t *testing.T) {
	t.Parallel()
	s := seedDB(t)
	d := newDriver(t, s, Options{}, 100, 30)

	d.keys("down", "c") // task 3, queued
	wantStatus(t, d, "Cancel task 3?")
	d.keys("n")
	if got := getTask(t, s, 3).State; got != agentledger.StateQueued {
		t.Fatalf("n cancelled the dialog, yet task 3 is %s", got)
	}
	d.keys("c", "y")
	wantStatus(t, d, "task 3 cancelled")
	if got := getTask(t, s, 3).State; got != agentledger.StateCancelled {
		t.Errorf("task 3 is %s", got)
	}

	d.keys("down", "t") // task 2, dead
	wantStatus(t, d, "Retry dead task 2?")
	d.keys("y")
	wantStatus(t, d, "task 2 queued again from attempt 1 (generation 1)")

	d.keys("down", "t") // task 1 succeeded: not dead
	wantStatus(t, d, "task 1 is succeeded: only a dead task can be retried")
	d.keys("R")
	wantStatus(t, d, "ALL effects run again")
	d.keys("enter") // out of habit: a re-run makes new charges, enter is not enough
	wantStatus(t, d, "press y to confirm: it cannot be taken back")
	if got := getTask(t, s, 1).Generation; got != 1 {
		t.Fatalf("enter re-ran task 1: generation %d", got)
	}
	d.keys("y")
	wantStatus(t, d, "task 1 queued as a new intent (generation 2): every effect runs again")
	if got := getTask(t, s, 1); got.Generation != 2 || got.State != agentledger.StateQueued {
		t.Errorf("task 1 after re-run: %s, generation %d", got.State, got.Generation)
	}
	d.keys("c", "y", "R") // cancelled now; a cancelled task can be re-run
	wantStatus(t, d, "generation 2 → 3")
	d.keys("esc")
	d.keys("r")
	wantStatus(t, d, "no effects recorded yet: every effect runs.")
}

func TestBulkOverTheFilter(t *testing.T) {
	t.Parallel()
	s := seedDB(t)
	d := newDriver(t, s, Options{Filter: Filter{Queue: "billing"}}, 100, 30)
	d.keys("X")
	wantStatus(t, d, "Cancel the 1 unfinished task?")
	wantStatus(t, d, "1 unfinished task matches the filter queue=billing.")
	d.keys("y")
	wantStatus(t, d, "cancelled 1 task, skipped 0")
	if got := getTask(t, s, 3).State; got != agentledger.StateCancelled {
		t.Errorf("task 3 is %s", got)
	}
	if got := getTask(t, s, 4).State; got != agentledger.StateNeedsAttention {
		t.Errorf("task 4, of another queue, is %s", got)
	}
	d.keys("T", "y")
	wantStatus(t, d, "retried 1 dead task, skipped 0")
	if got := getTask(t, s, 2).State; got != agentledger.StateQueued {
		t.Errorf("task 2 is %s", got)
	}
}

func TestWorkersFromTheDatabase(t *testing.T) {
	t.Parallel()
	s := seedDB(t)
	// Task 3 is claimed now by worker-z, on the database's own clock.
	s.Claims.Now = nil
	got, err := s.Claims.Claim(context.Background(), claims.ClaimParams{Queue: "billing", Worker: "worker-z", Limit: 1, Lease: time.Minute})
	if err != nil || len(got) != 1 {
		t.Fatalf("claim: %v, %d tasks", err, len(got))
	}
	d := newDriver(t, s, Options{Now: time.Now}, 100, 30)
	d.keys("w")
	wantStatus(t, d, "1 worker holding 1 lease")
	wantStatus(t, d, "worker-z")
	if strings.Contains(d.view(), "STALE") {
		t.Errorf("a fresh lease is stale:\n%s", d.view())
	}
}
