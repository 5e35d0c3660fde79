package claims_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

// A claim passes over the tasks other claims leased after its snapshot
// instead of locking their leased versions. Each claim here runs in a
// REPEATABLE READ transaction whose snapshot predates the other claims: a
// claim that locked such a row would fail to serialize there (under READ
// COMMITTED it would lock the leased version, pass it over, and hold the
// lock until it committed — the other daemon's completion of the task
// waiting for it). Every branch that locks rows is covered: the crowd's
// turns, the run claim, a few tenants' shares, one tenant's tasks, the
// full claim, the newcomer lane, and (below) one tenant's alone claim from
// its first task and expired leases.
func TestAClaimPassesOverTasksLeasedSinceItsSnapshot(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		fill    func(t *testing.T, db *pgxpool.Pool)
		dueOnly bool
		again   bool // a second, hinted claim: the run claim
	}{
		{name: "a crowd's turns", fill: func(t *testing.T, db *pgxpool.Pool) { crowd(t, db, 100, 2) }, dueOnly: true},
		{name: "a crowd of thin tenants, by the run claim", fill: func(t *testing.T, db *pgxpool.Pool) { crowd(t, db, 400, 1) },
			dueOnly: true, again: true},
		{name: "a few tenants' shares", fill: func(t *testing.T, db *pgxpool.Pool) { crowd(t, db, 3, 30) }, dueOnly: true},
		{name: "one tenant", fill: func(t *testing.T, db *pgxpool.Pool) { backlog(t, db, "solo", 80) }, dueOnly: true},
		{name: "the full claim", fill: func(t *testing.T, db *pgxpool.Pool) { crowd(t, db, 100, 2) }},
		{name: "the newcomer lane", fill: func(t *testing.T, db *pgxpool.Pool) {
			crowd(t, db, 100, 2)
			if _, err := db.Exec(context.Background(), "UPDATE tasks SET newcomer = true WHERE tenant < 'c0030'"); err != nil {
				t.Fatal(err)
			}
		}, dueOnly: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := testdb.New(t)
			c.fill(t, db)
			var due int
			if err := db.QueryRow(ctx, "SELECT count(*) FROM tasks").Scan(&due); err != nil {
				t.Fatal(err)
			}
			tx := snapshotNow(t, db)
			// The other daemon's claims lease every third task (with three
			// tenants, all of one), in every part of the rotation.
			leased := map[int64]bool{}
			rows, err := db.Query(ctx, `UPDATE tasks SET state = 'running', attempt = 1, lease_owner = 'other', lease_token = 1,
				lease_expires_at = now() + interval '1 minute', newcomer = NULL WHERE id % 3 = 0 RETURNING id`)
			if err != nil {
				t.Fatal(err)
			}
			ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range ids {
				leased[id] = true
			}

			s, hint := claims.New(tx), &claims.ClaimHint{}
			got := 0
			for i := range 2 {
				if i == 1 && !c.again {
					break
				}
				tasks, err := s.Claim(ctx, claims.ClaimParams{Queue: "default", Worker: "late", Limit: 60, Lease: time.Minute,
					DueOnly: c.dueOnly, Hint: hint})
				if err != nil {
					t.Fatalf("claim %d from a snapshot older than the other claim: %v", i+1, err)
				}
				for _, task := range tasks {
					if leased[task.ID] {
						t.Fatalf("claim %d took task %d, which the other claim had leased", i+1, task.ID)
					}
				}
				got += len(tasks)
			}
			if want := min(due-len(leased), 60*(1+btoi(c.again))); got != want {
				t.Errorf("the late claims took %d tasks of the %d the other left, want %d", got, due-len(leased), want)
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// One tenant's alone claim from its first task (no mark: the loop's first
// alone claim, or one after a rewind) passes over the tasks other claims
// leased after its snapshot too, rather than lock their leased versions:
// under READ COMMITTED their daemons' completions waited for its commit
// (with ten daemons over one tenant, the most sampled lock wait).
func TestAnAloneClaimFromTheFirstTaskPassesOverTasksLeasedSinceItsSnapshot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	backlog(t, db, "solo", 200)
	hint := &claims.ClaimHint{}
	if got := claimTurn(t, claims.New(db), hint, 10, true); len(got) != 10 { // the full claim finds the tenant alone
		t.Fatalf("the first claim took %d tasks, want 10", len(got))
	}
	hint.Rewind() // no mark: the next alone claim reads from the tenant's first task

	tx := snapshotNow(t, db)
	var leased []int64
	rows, err := db.Query(ctx, `UPDATE tasks SET state = 'running', attempt = 1, lease_owner = 'other', lease_token = 1,
		lease_expires_at = now() + interval '1 minute' WHERE state = 'queued' AND id % 3 = 0 RETURNING id`)
	if err != nil {
		t.Fatal(err)
	}
	if leased, err = pgx.CollectRows(rows, pgx.RowTo[int64]); err != nil {
		t.Fatal(err)
	}
	got, err := claims.New(tx).Claim(ctx, claims.ClaimParams{Queue: "default", Worker: "late", Limit: 60, Lease: time.Minute,
		DueOnly: true, Hint: hint})
	if err != nil {
		t.Fatalf("the alone claim from a snapshot older than the other claim: %v", err)
	}
	for _, task := range got {
		if slices.Contains(leased, task.ID) {
			t.Fatalf("the alone claim took task %d, which the other claim had leased", task.ID)
		}
	}
	if len(got) != 60 {
		t.Errorf("the alone claim took %d tasks, want 60", len(got))
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

// An expired lease retaken by another claim since a claim's snapshot is
// passed over, as a due task leased since is.
func TestAClaimPassesOverALeaseRetakenSinceItsSnapshot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClock()
	db, s := pinnedDB(t, c)
	task := enqueue(t, s, claims.EnqueueParams{MaxAttempts: 5})
	claimOne(t, s, "gone", time.Second)
	c.Advance(2 * time.Second)

	tx := snapshotNow(t, db)
	if got := claimOne(t, s, "first", time.Minute); got.ID != task.ID {
		t.Fatalf("the first claim took task %d, want the expired lease's %d", got.ID, task.ID)
	}
	late := claims.New(tx)
	late.Now = c.Now
	got, err := late.Claim(ctx, claims.ClaimParams{Queue: "default", Worker: "late", Limit: 10, Lease: time.Minute})
	if err != nil || len(got) != 0 {
		t.Fatalf("a claim from before the lease was retaken: %d tasks, %v; want none, no error", len(got), err)
	}
}

// The tasks a claim that rolled back had leased are claimed by the next
// claim, as if it had never run: the rollback leaves their xmax set, and a
// claim takes a row whose last locker ended before its snapshot.
func TestTasksOfARolledBackClaimAreClaimedNext(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct {
		name string
		fill func(t *testing.T, db *pgxpool.Pool)
	}{
		{"a crowd", func(t *testing.T, db *pgxpool.Pool) { crowd(t, db, 100, 2) }},
		{"one tenant", func(t *testing.T, db *pgxpool.Pool) { backlog(t, db, "solo", 100) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			db := testdb.New(t)
			c.fill(t, db)
			tx, err := db.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var aborted []int64
			for _, task := range claimTurn(t, claims.New(tx), &claims.ClaimHint{}, 40, true) {
				aborted = append(aborted, task.ID)
			}
			if err := tx.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			var marked int
			if err := db.QueryRow(ctx, "SELECT count(*) FROM tasks WHERE id = ANY ($1) AND xmax <> '0'::xid", aborted).Scan(&marked); err != nil {
				t.Fatal(err)
			}
			if len(aborted) != 40 || marked != 40 {
				t.Fatalf("the rolled-back claim took %d tasks, %d of them left with an xmax; want 40 and 40", len(aborted), marked)
			}
			hint := &claims.ClaimHint{}
			for i := range 2 { // the full claim, then a hinted one (the run claim, or one tenant's alone claim)
				var ids []int64
				for _, task := range claimTurn(t, claims.New(db), hint, 20, true) {
					ids = append(ids, task.ID)
				}
				if want := aborted[20*i : 20*i+20]; !slices.Equal(ids, want) {
					t.Fatalf("claim %d took %v, want the rolled-back claim's %v", i+1, ids, want)
				}
			}
		})
	}
}

// snapshotNow begins a REPEATABLE READ transaction and takes its snapshot;
// it is rolled back at the test's end unless committed.
func snapshotNow(t *testing.T, db *pgxpool.Pool) pgx.Tx {
	t.Helper()
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback(ctx) }) //nolint:errcheck // committed, or given up
	if _, err := tx.Exec(ctx, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	return tx
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
