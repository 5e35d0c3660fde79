package claims

import (
	"context"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

// A task that ends — dead, or compensated — after a wait woke it but
// before its wait tool ran again calls its open wait off, with the reason;
// a task that goes on (retrying) keeps it, and a success leaves waits as
// they are (its wait tool closed them).
func TestAnEndedTaskCallsItsWaitsOff(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	s := New(db)
	waiting := func(phase string) *agentledger.Task {
		t.Helper()
		r, err := s.Enqueue(ctx, EnqueueParams{Kind: "steps", MaxAttempts: 2})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(ctx, `INSERT INTO waits (task_id, generation, step, tenant, kind, deadline)
			VALUES ($1, 1, 'tool/1', 'default', 'timer', now() - interval '1 second')`, r.Task.ID); err != nil {
			t.Fatal(err)
		}
		if phase != "" {
			if _, err := db.Exec(ctx, `UPDATE tasks SET compensation = $2 WHERE id = $1`, r.Task.ID, phase); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.Claim(ctx, ClaimParams{Queue: DefaultQueue, Worker: "w", Limit: 1, Lease: time.Minute})
		if err != nil || len(got) != 1 || got[0].ID != r.Task.ID {
			t.Fatalf("claim: %v, %v", got, err)
		}
		return got[0]
	}
	waitOf := func(c *agentledger.Task) (state, reason string) {
		t.Helper()
		var r *string
		if err := db.QueryRow(ctx, `SELECT state, end_reason FROM waits WHERE task_id = $1`, c.ID).Scan(&state, &r); err != nil {
			t.Fatal(err)
		}
		if r != nil {
			reason = *r
		}
		return state, reason
	}

	retried := waiting("")
	if _, err := s.Fail(ctx, Failure{Lease: LeaseOf(retried), Error: "502", Delay: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if st, _ := waitOf(retried); st != "waiting" {
		t.Errorf("a task retrying: its wait %s, want waiting", st)
	}
	dead := waiting("")
	if _, err := s.Fail(ctx, Failure{Lease: LeaseOf(dead), Error: "403 not granted", Final: true}); err != nil {
		t.Fatal(err)
	}
	if st, why := waitOf(dead); st != "cancelled" || why != "its task ended (dead)" {
		t.Errorf("a dead task: its wait %s (%q), want cancelled (its task ended (dead))", st, why)
	}
	compensated := waiting("failed")
	if err := s.Succeed(ctx, LeaseOf(compensated), nil); err != nil {
		t.Fatal(err)
	}
	if st, why := waitOf(compensated); st != "cancelled" || why != "its task ended (compensated)" {
		t.Errorf("a compensated task: its wait %s (%q), want cancelled (its task ended (compensated))", st, why)
	}
	succeeded := waiting("")
	if err := s.Succeed(ctx, LeaseOf(succeeded), nil); err != nil {
		t.Fatal(err)
	}
	if st, _ := waitOf(succeeded); st != "waiting" {
		t.Errorf("a succeeded task: its wait %s, want it as it was", st)
	}
}
