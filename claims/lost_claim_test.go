package claims_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

// A claim whose commit is lost (a crash or a failover before its WAL was
// flushed: here, its transaction rolled back after its worker read the
// task) leaves the task runnable, and the next claim issues another token:
// every write the first worker still makes is fenced off. With tokens
// counted from the task's last durable one, both workers would hold the
// same token and both pass the fences.
func TestLostClaimTokenIsNeverIssuedAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	s := claims.New(pool)
	task := enqueue(t, s, claims.EnqueueParams{Kind: "noop"})
	p := claims.ClaimParams{Queue: claims.DefaultQueue, Limit: 1, Lease: time.Minute, DueOnly: true}

	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p.Worker = "worker-a"
	lost, err := claims.New(tx).Claim(ctx, p)
	if err != nil || len(lost) != 1 {
		t.Fatalf("A's claim: %d tasks, %v", len(lost), err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}

	p.Worker = "worker-b"
	got, err := s.Claim(ctx, p)
	if err != nil || len(got) != 1 || got[0].ID != task.ID {
		t.Fatalf("B's claim after A's was lost: %d tasks, %v", len(got), err)
	}
	a, b := lost[0], got[0]
	if b.LeaseToken == a.LeaseToken || b.Attempt != a.Attempt {
		t.Fatalf("B got token %d attempt %d; the lost claim had token %d attempt %d: want another token, the same attempt",
			b.LeaseToken, b.Attempt, a.LeaseToken, a.Attempt)
	}
	la := claims.LeaseOf(a)
	if res, err := s.Heartbeat(ctx, []agentledger.Lease{la}, time.Minute); err != nil || len(res.Lost) != 1 {
		t.Errorf("A's heartbeat: lost %v, %v; want its lease lost", res.Lost, err)
	}
	if err := s.Succeed(ctx, la, raw(`{"by":"a"}`)); err == nil {
		t.Error("A's succeed under the lost claim's token was taken")
	}
	if err := s.Succeed(ctx, claims.LeaseOf(b), raw(`{"by":"b"}`)); err != nil {
		t.Fatalf("B's succeed: %v", err)
	}
	if done := get(t, s, task.ID); done.State != agentledger.StateSucceeded || string(done.Result) != `{"by": "b"}` {
		t.Fatalf("task %s with result %s, want succeeded by b", done.State, done.Result)
	}
}
