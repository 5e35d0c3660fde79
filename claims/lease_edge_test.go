package claims_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

func TestClaimOnlyKindsTheWorkerServes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := pinnedStore(t, newClock())
	enqueue(t, s, claims.EnqueueParams{Kind: "new-kind"})
	old := enqueue(t, s, claims.EnqueueParams{Kind: "noop"})
	got, err := s.Claim(ctx, claims.ClaimParams{Queue: "default", Worker: "old-daemon", Limit: 10, Lease: time.Minute, Kinds: []string{"noop", "echo"}})
	if err != nil || len(got) != 1 || got[0].ID != old.ID {
		t.Fatalf("claimed %v (%v), want only task %d", got, err, old.ID)
	}
}

// Cancelling a running task whose lease expired cancels it at once: no
// worker may ever come back for it.
func TestCancelOfExpiredRunningTask(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClock()
	s, op := pinnedWithOperator(t, c)
	task := enqueue(t, s, claims.EnqueueParams{})
	claimOne(t, s, "crashed", time.Minute)
	c.Advance(2 * time.Minute)
	got, err := op.Cancel(ctx, "", task.ID)
	if err != nil || got.State != agentledger.StateCancelled || got.LeaseOwner != "" || got.FinishedAt == nil {
		t.Fatalf("cancel: %+v %v", got, err)
	}
	atts, _ := s.Attempts(ctx, task.ID)
	if len(atts) != 1 || atts[0].Outcome != agentledger.OutcomeLeaseExpired || atts[0].Worker != "crashed" {
		t.Fatalf("attempts %+v", atts)
	}
	claimNone(t, s, "w")
}

// A failure after an operator asked to cancel ends the task cancelled, not
// retrying after a backoff.
func TestFailAfterCancelRequestIsCancelled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, op := pinnedWithOperator(t, newClock())
	task := enqueue(t, s, claims.EnqueueParams{})
	a := claimOne(t, s, "w", time.Minute)
	if _, err := op.Cancel(ctx, "", task.ID); err != nil {
		t.Fatal(err)
	}
	st, err := s.Fail(ctx, claims.Failure{Lease: claims.LeaseOf(a), Error: "interrupted", Delay: time.Hour})
	if err != nil || st != agentledger.StateCancelled {
		t.Fatalf("state %s err %v", st, err)
	}
}

// A heartbeat never revives an expired lease, and a lease whose row is
// locked for a moment is reported busy, not lost.
func TestHeartbeatExpiredAndBusy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClock()
	db, s := pinnedDB(t, c)
	enqueue(t, s, claims.EnqueueParams{})
	enqueue(t, s, claims.EnqueueParams{})
	a := claimOne(t, s, "w", time.Minute)
	b := claimOne(t, s, "w", time.Minute)

	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM tasks WHERE id = $1 FOR SHARE`, b.ID); err != nil {
		t.Fatal(err)
	}
	res, err := s.Heartbeat(ctx, []agentledger.Lease{claims.LeaseOf(a), claims.LeaseOf(b)}, time.Minute)
	tx.Rollback(ctx)
	if err != nil || len(res.Lost) != 0 || len(res.Busy) != 1 || res.Busy[0] != claims.LeaseOf(b) {
		t.Fatalf("with b locked: %+v %v", res, err)
	}
	if got := get(t, s, a.ID); !got.LeaseExpiresAt.Equal(c.Now().Add(time.Minute)) {
		t.Fatalf("a was not renewed while b was busy")
	}

	c.Advance(2 * time.Minute) // both leases ran out; nobody claimed yet
	res, err = s.Heartbeat(ctx, []agentledger.Lease{claims.LeaseOf(a), claims.LeaseOf(b)}, time.Minute)
	if err != nil || len(res.Lost) != 2 {
		t.Fatalf("after expiry: %+v %v, want both lost", res, err)
	}
}

// Heartbeats and completions over the same leases, batched in different
// orders, never deadlock: every batched writer locks rows in id order.
func TestBatchedWritersDoNotDeadlock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	s := claims.New(db)
	for round := range 20 {
		batch := make([]claims.EnqueueParams, 200)
		for i := range batch {
			batch[i] = claims.EnqueueParams{Kind: "noop", Queue: fmt.Sprintf("r%d", round)}
		}
		if _, err := s.EnqueueBatch(ctx, batch); err != nil {
			t.Fatal(err)
		}
		tasks, err := s.Claim(ctx, claims.ClaimParams{Queue: fmt.Sprintf("r%d", round), Worker: "w", Limit: 200, Lease: time.Minute})
		if err != nil || len(tasks) != 200 {
			t.Fatalf("claim: %d %v", len(tasks), err)
		}
		var leases []agentledger.Lease
		var done []claims.Success
		for i := len(tasks) - 1; i >= 0; i-- { // the opposite order to the heartbeat's
			done = append(done, claims.Success{Lease: claims.LeaseOf(tasks[i])})
		}
		for _, task := range tasks {
			leases = append(leases, claims.LeaseOf(task))
		}
		var wg sync.WaitGroup
		var hbErr, okErr error
		wg.Add(2)
		go func() { defer wg.Done(); _, hbErr = s.Heartbeat(ctx, leases, time.Minute) }()
		go func() { defer wg.Done(); _, okErr = s.SucceedMany(ctx, done) }()
		wg.Wait()
		if hbErr != nil || okErr != nil {
			t.Fatalf("round %d: heartbeat %v, succeed %v", round, hbErr, okErr)
		}
		var left int
		db.QueryRow(ctx, `SELECT count(*) FROM tasks WHERE queue = $1 AND state <> 'succeeded'`, fmt.Sprintf("r%d", round)).Scan(&left)
		if left != 0 {
			t.Fatalf("round %d: %d tasks not succeeded", round, left)
		}
	}
}

// A due-only claim (a worker woken by new tasks) leaves expired leases to
// the full claim of the next poll; the full claim takes them over.
func TestDueOnlyClaimLeavesExpiredLeases(t *testing.T) {
	c := newClock()
	s := pinnedStore(t, c)
	task := enqueue(t, s, claims.EnqueueParams{})
	claimOne(t, s, "w1", time.Minute)
	c.Advance(2 * time.Minute)
	got, err := s.Claim(context.Background(), claims.ClaimParams{Queue: "default", Worker: "w2", Limit: 10,
		Lease: time.Minute, DueOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Fatalf("due-only claim took task %d (state %s), want none", got[0].ID, got[0].State)
	}
	again := claimOne(t, s, "w2", time.Minute)
	if again.ID != task.ID || again.Attempt != 2 {
		t.Fatalf("full claim got task %d attempt %d, want task %d attempt 2", again.ID, again.Attempt, task.ID)
	}
}
