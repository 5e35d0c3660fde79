package claims_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

// crowd inserts k due no-op tasks for each of n tenants c0000, c0001, …
func crowd(t *testing.T, db *pgxpool.Pool, n, k int) {
	t.Helper()
	if _, err := db.Exec(context.Background(),
		`INSERT INTO tasks (tenant, kind, run_at)
		 SELECT 'c' || lpad((g % $1::int)::text, 4, '0'), 'noop', now() - interval '1 hour'
		 FROM generate_series(0, $1::int * $2::int - 1) g`, n, k); err != nil {
		t.Fatal(err)
	}
}

func claimTurn(t *testing.T, s *claims.Store, hint *claims.ClaimHint, n int, dueOnly bool) []*agentledger.Task {
	t.Helper()
	got, err := s.Claim(context.Background(), claims.ClaimParams{Queue: "default", Worker: "w", Limit: n,
		Lease: time.Minute, DueOnly: dueOnly, Hint: hint})
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	return got
}

// With a crowd of tenants (200, more than a claim of 100 weighs one by
// one), claims take turns in rotation: each claim serves the tenants after
// the last one the loop's previous claim served, two tasks each (a turn is
// ceil(100/64)), and fills its batch; four claims serve every tenant
// exactly twice before any is served a third time.
func TestACrowdTakesTurnsInRotation(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	s := claims.New(db)
	crowd(t, db, 200, 3)
	hint := &claims.ClaimHint{}
	oneRound(t, s, hint, nil)
	// The round goes on where it stopped: the fifth claim starts again at the first tenant.
	if n := byTenant(claimTurn(t, s, hint, 100, true)); n["c0000"] != 1 || n["c0049"] != 1 {
		t.Fatalf("the next round began %v, want c0000…c0099 a task each", n)
	}
}

// A crowd claim never comes back short while work is due: what the turns
// leave (each of 100 tenants has one task) comes from a tenant past its
// turn.
func TestACrowdFillsItsBatch(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	s := claims.New(db)
	crowd(t, db, 100, 1)
	backlog(t, db, "big", 1000)
	got := claimTurn(t, s, &claims.ClaimHint{}, 150, false)
	if len(got) != 150 {
		t.Fatalf("claimed %d with 1,100 due, want 150", len(got))
	}
	if n := byTenant(got); n["big"] != 50 || len(n) != 101 {
		t.Fatalf("got %d tenants, big %d; want the 100 small tenants' tasks and 50 of big's", len(n), n["big"])
	}
}

// A weight multiplies a tenant's turn; a cap bounds it.
func TestACrowdHonoursWeightsAndCaps(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	s := claims.New(db)
	crowd(t, db, 100, 10)
	share(t, db, "c0000", 3, nil)
	one := 1
	share(t, db, "c0001", 3, &one)
	n := byTenant(claimTurn(t, s, &claims.ClaimHint{}, 100, true))
	if n["c0000"] != 5 || n["c0001"] != 1 || n["c0002"] != 2 {
		t.Fatalf("turns %v: want c0000 (weight 3: ceil(100·3/64)) 5, c0001 (capped at 1) 1, c0002 2", n)
	}
	// c0001 is at its cap: the rotation passes it by.
	for range 3 {
		if n := byTenant(claimTurn(t, s, &claims.ClaimHint{}, 100, false)); n["c0001"] != 0 {
			t.Fatalf("c0001 at its cap got %d more", n["c0001"])
		}
	}
}

// Concurrent crowd claims from 8 connections, each loop with its own
// rotation: every task is claimed once, and a capped tenant never has more
// than its cap leased — the claims do not wait on each other's locks of
// its share row, they pass it by.
// Deep tenants are claimed by the full claims; thin ones mostly by run
// claims (claimRunSQL), topped up by full ones.
func TestCrowdClaimsRaceSafely(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name          string
		tenants, each int
	}{{"deep tenants", 150, 20}, {"thin tenants", 1500, 2}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			crowdRace(t, c.tenants, c.each)
		})
	}
}

func crowdRace(t *testing.T, tenants, each int) {
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(testdb.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	const workers, capped = 8, 3
	cfg.MaxConns = workers + 1
	db, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	crowd(t, db, tenants, each)
	limit := capped
	share(t, db, "c0007", 5, &limit)

	watch := &capWatch{tenant: "c0007"}
	var mu sync.Mutex
	seen := map[int64]bool{}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := claims.New(db)
			hint := &claims.ClaimHint{}
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for watch.done.Load() < int64(tenants*each) {
				got, err := s.Claim(ctx, claims.ClaimParams{Queue: "default", Worker: fmt.Sprint("w", w),
					Limit: 1 + rng.IntN(120), Lease: time.Minute, DueOnly: rng.IntN(2) == 0, Hint: hint})
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				for _, task := range got {
					if seen[task.ID] {
						mu.Unlock()
						errs <- fmt.Errorf("task %d claimed twice", task.ID)
						return
					}
					seen[task.ID] = true
				}
				mu.Unlock()
				watch.claimed(got)
				if err := watch.finish(ctx, s, got); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := len(seen); got != tenants*each {
		t.Fatalf("claimed %d distinct tasks, want %d", got, tenants*each)
	}
	if m := watch.most.Load(); m > capped {
		t.Fatalf("c0007 had %d tasks leased at once, cap %d", m, capped)
	}
}

// A busy daemon claims a slot or two at a time; a weight still counts: the
// rotation stays on a tenant until it got its turn (w tasks for claims of
// up to 256) across claims.
func TestACrowdWeighsClaimsOfOneTask(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	s := claims.New(db)
	crowd(t, db, 100, 10)
	share(t, db, "c0001", 2, nil)
	hint := &claims.ClaimHint{}
	var order []string
	for i := range 6 {
		got := claimTurn(t, s, hint, 1, i%2 == 0)
		if len(got) != 1 {
			t.Fatalf("claim %d took %d tasks, want 1", i, len(got))
		}
		order = append(order, got[0].Tenant)
	}
	if want := []string{"c0000", "c0001", "c0001", "c0002", "c0003", "c0004"}; !slices.Equal(order, want) {
		t.Fatalf("claims of one served %v, want %v", order, want)
	}
}

// On a database whose collation is not C's (an ICU locale, as en_US is for
// many installations), tenant names that mix case sort otherwise than
// their bytes: the rotation still serves every tenant its turn exactly
// once a round, since the database, not the bytes, says which tenant a
// claim served last.
//
// Due-only claims, after the first, are run claims (claimRunSQL), which
// say themselves where they left the rotation.
func TestACrowdTakesTurnsUnderACollation(t *testing.T) {
	t.Parallel()
	for _, dueOnly := range []func(int) bool{
		func(i int) bool { return i%2 == 1 }, // alternately in full
		func(int) bool { return true },       // the run claims of a busy loop
	} {
		db := testdb.Collated(t, "en-US")
		if _, err := db.Exec(context.Background(),
			`INSERT INTO tasks (tenant, kind, run_at)
			 SELECT CASE WHEN g % 2 = 0 THEN 'c' ELSE 'C' END || lpad((g % 200)::text, 4, '0'), 'noop', now() - interval '1 hour'
			 FROM generate_series(0, 599) g`); err != nil {
			t.Fatal(err)
		}
		var icu bool
		if err := db.QueryRow(context.Background(), `SELECT 'C0001' < 'c0002' AND 'c0002' < 'C0003'`).Scan(&icu); err != nil || !icu {
			t.Fatalf("the database sorts bytewise (%v): the test would not test", err)
		}
		oneRound(t, claims.New(db), &claims.ClaimHint{}, dueOnly)
	}
}

// oneRound makes four claims of 100 from a crowd of 200 tenants with 3
// due tasks each, full ones, due-only where dueOnly says (alternately
// when it is nil) and in full otherwise: each gives a tenant a turn of at
// most 2 (ceil(100/64)), and together they serve every tenant exactly
// twice.
func oneRound(t *testing.T, s *claims.Store, hint *claims.ClaimHint, dueOnly func(int) bool) {
	t.Helper()
	if dueOnly == nil {
		dueOnly = func(i int) bool { return i%2 == 1 }
	}
	served := map[string]int{}
	for i := range 4 {
		got := claimTurn(t, s, hint, 100, dueOnly(i))
		if len(got) != 100 {
			t.Fatalf("claim %d took %d tasks with 600 due, want 100", i, len(got))
		}
		for tenant, n := range byTenant(got) {
			if n > 2 {
				t.Fatalf("claim %d gave %s %d tasks, want a turn of at most 2", i, tenant, n)
			}
			served[tenant] += n
		}
	}
	if len(served) != 200 {
		t.Fatalf("4 claims of 100 reached %d of 200 tenants", len(served))
	}
	for tenant, n := range served {
		if n != 2 {
			t.Fatalf("after one round %s had %d tasks, want 2 (every tenant its turn once)", tenant, n)
		}
	}
}
