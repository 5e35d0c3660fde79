package claims_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

// A parked deferral leaves its task waiting: out of every claim's reach
// even past its deadline, until WakeDue (or a decision) queues it again;
// a cancel requested meanwhile parks nothing.
func TestParkedTaskWaitsUntilWoken(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClock()
	s, op := pinnedWithOperator(t, c)
	task := enqueue(t, s, claims.EnqueueParams{MaxAttempts: 1})
	a := claimOne(t, s, "w", time.Minute)
	if err := s.Defer(ctx, claims.Deferral{Lease: claims.LeaseOf(a), Until: c.Now().Add(time.Hour), Reason: "waiting for approval 1", Park: true}); err != nil {
		t.Fatal(err)
	}
	if got := get(t, s, task.ID); got.State != agentledger.StateWaiting || got.Attempt != 0 || got.WaitReason != "waiting for approval 1" {
		t.Fatalf("parked: %s attempt %d wait %q", got.State, got.Attempt, got.WaitReason)
	}
	c.Advance(2 * time.Hour) // past its deadline: still no claim reads it
	claimNone(t, s, "w")
	if n, err := s.WakeDue(ctx, "other"); err != nil || n != 0 {
		t.Fatalf("another queue's wake: %d %v", n, err)
	}
	if n, err := s.WakeDue(ctx, "default"); err != nil || n != 1 {
		t.Fatalf("wake: %d %v, want 1", n, err)
	}
	// What it waited for is over: no longer said of the queued task.
	if got := get(t, s, task.ID); got.State != agentledger.StateQueued || got.WaitReason != "" {
		t.Fatalf("woken: %s, wait %q, want queued with no wait", got.State, got.WaitReason)
	}
	b := claimOne(t, s, "w", time.Minute)
	if b.ID != task.ID || b.Attempt != 1 {
		t.Fatalf("claimed %d at attempt %d", b.ID, b.Attempt)
	}

	// A cancel asked while it ran: the deferral queues it, due at once,
	// for the cancel to be acknowledged.
	other := enqueue(t, s, claims.EnqueueParams{})
	o := claimOne(t, s, "w", time.Minute)
	if _, err := op.Cancel(ctx, "", other.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.Defer(ctx, claims.Deferral{Lease: claims.LeaseOf(o), Until: c.Now().Add(time.Hour), Reason: "x", Park: true}); err != nil {
		t.Fatal(err)
	}
	if got := get(t, s, other.ID); got.State != agentledger.StateQueued {
		t.Fatalf("a parked deferral of a task being cancelled: %s, want queued", got.State)
	}
}

// A wake that lands while the task runs — between the attempt's look at
// its wait and its park — is not lost: the park queues the task due at
// once, where it would otherwise sleep until its deadline. Without a
// wake, the same park parks.
func TestAWakeDuringTheAttemptIsNotLost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	s := claims.New(db)
	wake := func(id int64) {
		t.Helper()
		var n int
		if err := db.QueryRow(ctx, `WITH d AS (SELECT $1::bigint AS task_id), `+claims.WakeTasks+`
			SELECT count(*)::int FROM woken WHERE (SELECT count(*) FROM notified) >= 0`, id).Scan(&n); err != nil || n != 1 {
			t.Fatalf("wake of task %d: %d woken, %v", id, n, err)
		}
	}
	for _, woken := range []bool{false, true} {
		task := enqueue(t, s, claims.EnqueueParams{})
		a := claimOne(t, s, "w", time.Minute)
		if woken {
			wake(task.ID)
		}
		if err := s.Defer(ctx, claims.Deferral{Lease: claims.LeaseOf(a), Until: time.Now().Add(time.Hour), Reason: "waiting for signal", Park: true}); err != nil {
			t.Fatal(err)
		}
		got := get(t, s, task.ID)
		want := agentledger.StateWaiting
		if woken {
			want = agentledger.StateQueued
		}
		if got.State != want || (woken && got.RunAt.After(time.Now())) {
			t.Fatalf("woken %v: %s due %s, want %s", woken, got.State, got.RunAt, want)
		}
		// A woken task waits for nothing: the reason is not kept on it
		// (its attempt's record keeps it).
		if wantReason := map[bool]string{false: "waiting for signal", true: ""}[woken]; got.WaitReason != wantReason {
			t.Fatalf("woken %v: wait reason %q, want %q", woken, got.WaitReason, wantReason)
		}
		if woken {
			if b := claimOne(t, s, "w", time.Minute); b.ID != task.ID {
				t.Fatalf("claimed %d, want the woken %d", b.ID, task.ID)
			}
		}
	}
}

// Closing a breaker by hand lets the tasks it held back go now: those
// deferred with a reason that starts with its prefix are due at once, the
// reason cleared; another target's, one whose name only looks alike (a
// LIKE pattern would match '_'), and a task not deferred stay as they are.
func TestReleaseDeferred(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	s := claims.New(db)
	later := time.Now().Add(time.Hour)
	var ids []int64
	for _, reason := range []string{
		"http:https://a_b.example: circuit opened by an operator until closed",
		"http:https://a_b.example: circuit open until 12:00:00",
		"http:https://aXb.example: circuit open until 12:00:00",
		"mcp:shop: circuit open until 12:00:00",
		"",
	} {
		r, err := s.Enqueue(ctx, claims.EnqueueParams{Kind: "noop", RunAt: later})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(ctx, `UPDATE tasks SET wait_reason = nullif($2, '') WHERE id = $1`, r.Task.ID, reason); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.Task.ID)
	}
	n, err := s.ReleaseDeferred(ctx, "http:https://a_b.example: circuit ")
	if err != nil || n != 2 {
		t.Fatalf("released %d, %v; want 2", n, err)
	}
	for i, id := range ids {
		task, err := s.Get(ctx, "", id)
		if err != nil {
			t.Fatal(err)
		}
		due := !task.RunAt.After(time.Now())
		if due != (i < 2) || (i < 2 && task.WaitReason != "") {
			t.Errorf("task %d: due %v, reason %q", i, due, task.WaitReason)
		}
	}
	if _, err := s.ReleaseDeferred(ctx, ""); err == nil {
		t.Fatal("an empty prefix was taken")
	}
}
