package claims_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

// newcomer reads whether task id is marked a newcomer.
func newcomer(t *testing.T, db *pgxpool.Pool, id int64) bool {
	t.Helper()
	var marked *bool
	if err := db.QueryRow(context.Background(), `SELECT newcomer FROM tasks WHERE id = $1`, id).Scan(&marked); err != nil {
		t.Fatal(err)
	}
	return marked != nil && *marked
}

func enqueueFor(t *testing.T, s *claims.Store, tenant string) int64 {
	t.Helper()
	r, err := s.Enqueue(context.Background(), claims.EnqueueParams{Tenant: tenant, Kind: "noop"})
	if err != nil {
		t.Fatal(err)
	}
	return r.Task.ID
}

// A task is marked a newcomer when its tenant had nothing runnable in
// its queue and another tenant had: not alone, not behind its own work,
// not the second of a batch, not scheduled for later; its claim clears
// the mark.
func TestNewcomersAreMarkedOnArrival(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	s := claims.New(db)
	if id := enqueueFor(t, s, "a"); newcomer(t, db, id) {
		t.Error("a tenant alone in its queue was marked a newcomer")
	}
	b := enqueueFor(t, s, "b")
	if !newcomer(t, db, b) {
		t.Error("b's first task, while a's waits, is not marked a newcomer")
	}
	if id := enqueueFor(t, s, "b"); newcomer(t, db, id) {
		t.Error("b's second task, behind its first, was marked a newcomer")
	}
	batch, err := s.EnqueueBatch(ctx, []claims.EnqueueParams{{Tenant: "c", Kind: "noop"}, {Tenant: "c", Kind: "noop"}, {Tenant: "0", Kind: "noop"}})
	if err != nil {
		t.Fatal(err)
	}
	if !newcomer(t, db, batch[0].Task.ID) || newcomer(t, db, batch[1].Task.ID) || !newcomer(t, db, batch[2].Task.ID) {
		t.Errorf("a batch of c, c, 0: marked %v %v %v, want the first of each tenant", newcomer(t, db, batch[0].Task.ID),
			newcomer(t, db, batch[1].Task.ID), newcomer(t, db, batch[2].Task.ID))
	}
	later, err := s.Enqueue(ctx, claims.EnqueueParams{Tenant: "d", Kind: "noop", RunAt: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if newcomer(t, db, later.Task.ID) {
		t.Error("a task scheduled for later was marked a newcomer")
	}
	if _, err := db.Exec(ctx, `UPDATE tasks SET run_at = now() - interval '1 hour' WHERE tenant <> 'b'`); err != nil {
		t.Fatal(err)
	}
	got, err := s.Claim(ctx, claims.ClaimParams{Queue: "default", Worker: "w", Limit: 10, Lease: time.Minute})
	if err != nil || len(got) != 7 {
		t.Fatalf("claimed %d of 7, %v", len(got), err)
	}
	if newcomer(t, db, b) {
		t.Error("the claim of b's first task left its mark")
	}
}

// In a crowd of 200 tenants with work, a new tenant's task is in the next
// claim, though the rotation would reach it four claims later, and one of
// its tasks only; the claim after it goes on with the rotation where it
// stopped, not after the newcomer. A capped tenant is not marked, and
// waits for its turn, where its room is counted under a lock.
func TestANewcomerIsInTheNextCrowdClaim(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	s := claims.New(db)
	crowd(t, db, 200, 3)
	five := 5
	share(t, db, "zy", 1, &five)
	capped := enqueueFor(t, s, "zy")
	zz := enqueueFor(t, s, "zz")
	if !newcomer(t, db, zz) || newcomer(t, db, capped) {
		t.Fatal("zz was not marked a newcomer, or the capped zy was")
	}
	// Two enqueues of a newcomer at once each see nothing of the other's:
	// both are marked, and the lane takes one of a tenant a claim.
	if _, err := db.Exec(context.Background(), `UPDATE tasks SET newcomer = true WHERE id = $1`, enqueueFor(t, s, "zz")); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(context.Background(), `UPDATE tasks SET newcomer = true WHERE id = $1`, capped); err != nil {
		t.Fatal(err) // capped after its arrival: the lane still leaves it to its turn
	}
	hint := &claims.ClaimHint{}
	first := byTenant(claimTurn(t, s, hint, 100, true))
	if first["zz"] != 1 {
		t.Fatalf("the next claim served %v, without the newcomer zz", first)
	}
	if first["zy"] != 0 {
		t.Error("the lane served a capped newcomer")
	}
	if first["c0048"] != 2 || first["c0049"] != 1 || first["c0050"] != 0 {
		t.Fatalf("the rotation's part of the claim: c0048 %d, c0049 %d, c0050 %d; want 2, 1, 0",
			first["c0048"], first["c0049"], first["c0050"])
	}
	second := byTenant(claimTurn(t, s, hint, 100, false))
	if second["c0049"] != 1 || second["c0050"] != 2 || second["c0000"] != 0 {
		t.Fatalf("the claim after served c0049 %d, c0050 %d, c0000 %d; want 1, 2, 0: the rotation goes on at c0049",
			second["c0049"], second["c0050"], second["c0000"])
	}
}

// The lane takes at most a quarter of a claim, the oldest newcomers first;
// the rest wait for the next claim's lane (or their turn).
func TestTheLaneTakesAQuarterOldestFirst(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	s := claims.New(db)
	crowd(t, db, 200, 3)
	for i := range 40 {
		enqueueFor(t, s, fmt.Sprintf("n%02d", i))
	}
	hint := &claims.ClaimHint{}
	first := byTenant(claimTurn(t, s, hint, 100, true))
	for i := range 40 {
		want := 0
		if i < 25 {
			want = 1
		}
		if n := first[fmt.Sprintf("n%02d", i)]; n != want {
			t.Fatalf("the first claim served n%02d %d times, want %d: its lane takes the 25 oldest (%v)", i, n, want, first)
		}
	}
	second := byTenant(claimTurn(t, s, hint, 100, true))
	for i := 25; i < 40; i++ {
		if second[fmt.Sprintf("n%02d", i)] != 1 {
			t.Fatalf("the second claim did not serve n%02d: %v", i, second)
		}
	}
}
