package claims_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

// A claim whose snapshot was taken before a cap committed, and which
// commits after the cap's trigger ran, leases the tenant's tasks marked
// uncapped. SettleCaps waits for it to end and marks them, so they count:
// here the "claim" is a transaction that leased one of g's tasks as
// uncapped and is still open when g is capped at 2; SettleCaps must still
// be waiting when it commits, and g's room afterwards is 1.
func TestSettleCapsCountsTasksLeasedAsTheCapCommitted(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db := testdb.New(t)
	backlog(t, db, "g", 3)
	claim, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer claim.Rollback(ctx)
	if _, err := claim.Exec(ctx, `UPDATE tasks SET state = 'running', attempt = 1, lease_owner = 'w', lease_token = 1,
		lease_expires_at = now() + interval '1 hour', attempted_at = now(), capped = false
		WHERE id = (SELECT min(id) FROM tasks WHERE tenant = 'g')`); err != nil {
		t.Fatal(err)
	}
	two := 2
	share(t, db, "g", 1, &two)

	settled := make(chan error, 1)
	go func() { settled <- claims.New(db).SettleCaps(ctx, []string{"g"}) }()
	// SettleCaps is waiting once it has asked for the older transactions.
	for {
		var waiting bool
		if err := db.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_stat_activity WHERE query LIKE '%claims.settleCapsWait%'
			AND pid <> pg_backend_pid())`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			break
		}
		select {
		case err := <-settled:
			t.Fatalf("SettleCaps returned (%v) before asking for the transactions older than it", err)
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
	select {
	case err := <-settled:
		t.Fatalf("SettleCaps returned (%v) while a claim older than it was open", err)
	default:
	}
	if err := claim.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-settled; err != nil {
		t.Fatal(err)
	}
	var room int
	if err := db.QueryRow(ctx, `SELECT agentledger_tenant_turn('g')`).Scan(&room); err != nil {
		t.Fatal(err)
	}
	if room != 1 {
		var marks string
		_ = db.QueryRow(ctx, `SELECT string_agg(coalesce(capped::text, 'unknown'), ',') FROM tasks WHERE state = 'running'`).Scan(&marks)
		t.Fatalf("g capped at 2 with 1 running: room %d, want 1 (running marked %s)", room, strings.TrimSpace(marks))
	}
}
