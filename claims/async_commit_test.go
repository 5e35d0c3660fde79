package claims

import (
	"context"
	"testing"
	"time"

	"github.com/agentledger/agentledger/internal/test/testdb"
)

// The due-only claims commit asynchronously; the full claim (which also
// buries expired leases) commits as the session says.
func TestDueClaimsCommitAsynchronously(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	if _, err := New(pool).Enqueue(ctx, EnqueueParams{Kind: "noop"}); err != nil {
		t.Fatal(err)
	}
	p := ClaimParams{Queue: DefaultQueue, Worker: "w", Limit: 1, Lease: time.Minute, Hint: &ClaimHint{tenant: DefaultTenant}}
	for _, c := range []struct {
		name, sql, want string
	}{
		{"the full claim", claimSQL, "on"},
		{"the fair-share due claim", claimDueSQL, "off"},
		{"the one-tenant due claim", claimAloneSQL, "off"},
	} {
		// Each claim in a transaction of its own, rolled back: the task
		// stays due for the next, and the setting can be read after it.
		// (The test cluster commits asynchronously throughout: each
		// transaction starts synchronous.)
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, `SET LOCAL synchronous_commit = on`); err != nil {
			t.Fatal(err)
		}
		got, err := New(tx).claim(ctx, c.sql, p)
		if err != nil || len(got) != 1 {
			t.Fatalf("%s: %d tasks, %v", c.name, len(got), err)
		}
		var mode string
		if err := tx.QueryRow(ctx, `SHOW synchronous_commit`).Scan(&mode); err != nil {
			t.Fatal(err)
		}
		if mode != c.want {
			t.Errorf("%s's transaction commits with synchronous_commit %s, want %s", c.name, mode, c.want)
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
