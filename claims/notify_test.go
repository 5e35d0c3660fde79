package claims_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

// listen returns a connection listening for wake-ups on the database of url.
func listen(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	if _, err := conn.Exec(context.Background(), "LISTEN agentledger_task_insert"); err != nil {
		t.Fatal(err)
	}
	return conn
}

// wakeUp waits for one wake-up and returns its queue.
func wakeUp(t *testing.T, conn *pgx.Conn, what string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := conn.WaitForNotification(ctx)
	if err != nil {
		t.Fatalf("%s: no wake-up: %v", what, err)
	}
	return n.Payload
}

// Enqueueing a due task and releasing a leased one wake the workers of the
// task's queue; a task due later wakes nobody.
func TestWakeUps(t *testing.T) {
	url := testdb.URL(t)
	s := claims.New(testdb.Open(t, url))
	l := listen(t, url)
	ctx := context.Background()

	if _, err := s.Enqueue(ctx, claims.EnqueueParams{Kind: "noop", Queue: "later", RunAt: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Enqueue(ctx, claims.EnqueueParams{Kind: "noop", Queue: "q1"}); err != nil {
		t.Fatal(err)
	}
	if q := wakeUp(t, l, "enqueue"); q != "q1" {
		t.Fatalf("enqueue woke queue %q, want q1 (a task due in an hour wakes nobody)", q)
	}
	got, err := s.Claim(ctx, claims.ClaimParams{Queue: "q1", Worker: "w", Limit: 1, Lease: time.Minute})
	if err != nil || len(got) != 1 {
		t.Fatalf("claim: %v, %d tasks", err, len(got))
	}
	if _, err := s.ReleaseMany(ctx, []agentledger.Lease{claims.LeaseOf(got[0])}); err != nil {
		t.Fatal(err)
	}
	if q := wakeUp(t, l, "release"); q != "q1" {
		t.Fatalf("release woke queue %q, want q1", q)
	}
}
