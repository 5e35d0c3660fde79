package claims_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

// A poll's probe says whether a lease of the queue has expired (only then
// does the poll claim in full) and whether any tenant has a cap.
func TestProbe(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	s := claims.New(db)
	if sw, err := s.Probe(ctx, "default"); err != nil || sw.Expired || sw.Capped {
		t.Fatalf("empty: %+v %v", sw, err)
	}
	backlog(t, db, "a", 2)
	got, err := s.Claim(ctx, claims.ClaimParams{Queue: "default", Worker: "w", Limit: 2, Lease: time.Minute})
	if err != nil || len(got) != 2 {
		t.Fatalf("claim: %d, %v", len(got), err)
	}
	if sw, err := s.Probe(ctx, "default"); err != nil || sw.Expired {
		t.Fatalf("leases running: %+v %v", sw, err)
	}
	if _, err := db.Exec(ctx, `UPDATE tasks SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, got[0].ID); err != nil {
		t.Fatal(err)
	}
	five := 5
	share(t, db, "b", 1, &five)
	if sw, err := s.Probe(ctx, "default"); err != nil || !sw.Expired || !sw.Capped {
		t.Fatalf("a lease expired, b capped: %+v %v", sw, err)
	}
	if sw, err := s.Probe(ctx, "other"); err != nil || sw.Expired {
		t.Fatalf("another queue: %+v %v", sw, err)
	}
}
