package claims_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

// A spread hint's rotation starts at a tenant drawn from the planner's
// histogram of tenants, a different one for each loop (so that many loops
// do not claim the same tenants' tasks one after the other); a plain hint's,
// and a spread one's without statistics, at the first tenant.
func TestSpreadLoopsStartTheirRotationsApart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	// No autoanalyze: the first loop must find no statistics.
	if _, err := db.Exec(ctx, "ALTER TABLE tasks SET (autovacuum_enabled = off)"); err != nil {
		t.Fatal(err)
	}
	crowd(t, db, 1000, 2)
	start := func(h *claims.ClaimHint) string { // the first tenant, in rotation order, of a claim of 10
		t.Helper()
		tx, err := db.Begin(ctx) // rolled back: every loop claims from the same tasks
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx) //nolint:errcheck
		served := map[int]bool{}
		for _, task := range claimTurn(t, claims.New(tx), h, 10, true) {
			var n int
			if _, err := fmt.Sscanf(task.Tenant, "c%d", &n); err != nil {
				t.Fatal(err)
			}
			served[n] = true
		}
		if len(served) != 10 {
			t.Fatalf("a claim of 10 served %d tenants, want 10 (a task each)", len(served))
		}
		for n := range served { // ten tenants in a row on the ring of 1,000: the one whose predecessor was not served
			if !served[(n+999)%1000] {
				return fmt.Sprintf("c%04d", n)
			}
		}
		t.Fatalf("no first tenant among %v", served)
		return ""
	}
	if got := start(claims.SpreadHint()); got != "c0000" {
		t.Fatalf("without statistics a spread loop started at %s, want c0000", got)
	}
	if _, err := db.Exec(ctx, "ANALYZE tasks"); err != nil {
		t.Fatal(err)
	}
	var bounds []string
	if err := db.QueryRow(ctx, `SELECT histogram_bounds::text::text[] FROM pg_stats WHERE tablename = 'tasks' AND attname = 'tenant'`).
		Scan(&bounds); err != nil || len(bounds) < 10 {
		t.Fatalf("the histogram of tenants: %v, %v", bounds, err)
	}
	starts := map[string]bool{}
	for range 8 {
		got := start(claims.SpreadHint())
		if !slices.Contains(bounds, got) {
			t.Fatalf("a spread loop started at %s, not at a bound of the histogram %v", got, bounds)
		}
		starts[got] = true
	}
	if len(starts) < 2 {
		t.Errorf("8 spread loops all started at %v", starts)
	}
	if got := start(&claims.ClaimHint{}); got != "c0000" {
		t.Errorf("a plain loop started at %s, want c0000", got)
	}
}
