package claims_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

// backlog inserts n due no-op tasks of tenant in one statement.
func backlog(t *testing.T, db *pgxpool.Pool, tenant string, n int) {
	t.Helper()
	if _, err := db.Exec(context.Background(),
		`INSERT INTO tasks (tenant, kind, run_at) SELECT $1, 'noop', now() - interval '1 hour' FROM generate_series(1, $2)`,
		tenant, n); err != nil {
		t.Fatal(err)
	}
}

// share stores a tenant's share as agentd's config file would.
func share(t *testing.T, db *pgxpool.Pool, tenant string, weight int, maxRunning *int) {
	t.Helper()
	if _, err := db.Exec(context.Background(),
		`INSERT INTO tenant_shares (tenant, weight, max_running, source) VALUES ($1, $2, $3, 'config')
		 ON CONFLICT (tenant) DO UPDATE SET weight = EXCLUDED.weight, max_running = EXCLUDED.max_running`,
		tenant, weight, maxRunning); err != nil {
		t.Fatal(err)
	}
}

// byTenant counts tasks by tenant.
func byTenant(tasks []*agentledger.Task) map[string]int {
	out := map[string]int{}
	for _, t := range tasks {
		out[t.Tenant]++
	}
	return out
}

func claimBatch(t *testing.T, s *claims.Store, n int, dueOnly bool) []*agentledger.Task {
	t.Helper()
	got, err := s.Claim(context.Background(), claims.ClaimParams{Queue: "default", Worker: "w", Limit: n,
		Lease: time.Minute, DueOnly: dueOnly})
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	return got
}

// Tenant A has 100,000 tasks queued; tenant B submits one afterwards: B's
// task is in the very next claim batch, whichever claim runs, and the rest
// of the batch is A's (the claim leaves no slot empty while A has work).
func TestFairShareTakesANewTenantInTheNextBatch(t *testing.T) {
	t.Parallel()
	for _, dueOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("dueOnly=%v", dueOnly), func(t *testing.T) {
			t.Parallel()
			db := testdb.New(t)
			s := claims.New(db)
			backlog(t, db, "a", 100_000)
			if _, err := db.Exec(context.Background(), "ANALYZE tasks"); err != nil {
				t.Fatal(err)
			}
			b := enqueue(t, s, claims.EnqueueParams{Tenant: "b"})

			got := claimBatch(t, s, 10, dueOnly)
			if n := byTenant(got); n["b"] != 1 || n["a"] != 9 {
				t.Fatalf("the batch after B's submission: %v, want B's task and 9 of A's", n)
			}
			for _, task := range got {
				if task.Tenant == "b" && task.ID != b.ID {
					t.Fatalf("claimed B's task %d, want %d", task.ID, b.ID)
				}
			}
			if n := byTenant(claimBatch(t, s, 10, dueOnly)); n["a"] != 10 {
				t.Fatalf("the next batch: %v, want 10 of A's", n)
			}
		})
	}
}

// When the batch cannot give every tenant a task, the tenants with the
// fewest running tasks for their weight come first: a batch of one goes to
// B, new and idle, not to A, which already runs five; with weight 4, A's
// five count less than B's two.
func TestFairShareServesTheLeastBusyTenantFirst(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	s := claims.New(db)
	backlog(t, db, "a", 100)
	if n := byTenant(claimBatch(t, s, 5, true)); n["a"] != 5 {
		t.Fatalf("A alone: %v, want 5 of A's", n)
	}
	for i := range 3 {
		enqueue(t, s, claims.EnqueueParams{Tenant: "b", SubmissionKey: fmt.Sprint("b", i)})
	}
	for round := range 2 {
		if n := byTenant(claimBatch(t, s, 1, round == 0)); n["b"] != 1 {
			t.Fatalf("a batch of one with A running 5 and B %d: %v, want B's", round, n)
		}
	}
	share(t, db, "a", 4, nil) // 5 running / 4 < 2 running / 1
	if n := byTenant(claimBatch(t, s, 1, true)); n["a"] != 1 {
		t.Fatalf("A of weight 4 running 5, B of weight 1 running 2: %v, want A's", n)
	}
}

// Weights share a batch among the tenants that have due tasks: 3 to 1 of a
// batch of 8 is 6 and 2; a tenant with fewer due tasks than its share
// leaves the rest to the others.
func TestFairShareFollowsWeights(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	s := claims.New(db)
	backlog(t, db, "a", 100)
	backlog(t, db, "b", 100)
	backlog(t, db, "c", 1)
	share(t, db, "a", 3, nil)

	// a: ceil(10·3/5) = 6, b: ceil(10/5) = 2, c: 1 of its 2; the slot c
	// leaves goes to a or b (by the weighted lottery).
	if n := byTenant(claimBatch(t, s, 10, true)); n["a"] < 6 || n["b"] < 2 || n["a"]+n["b"] != 9 || n["c"] != 1 {
		t.Fatalf("3:1:1 of 10 with c holding one task: %v, want a 6, b 2, c 1 and one more of a or b", n)
	}
	if n := byTenant(claimBatch(t, s, 8, true)); n["a"] != 6 || n["b"] != 2 {
		t.Fatalf("3:1 of 8: %v, want a 6, b 2", n)
	}
}

// More tenants than the batch holds: each claim takes one task of as many
// tenants as it holds, and over rounds every tenant gets its turn.
func TestFairShareRotatesManyTenants(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	s := claims.New(db)
	for i := range 20 {
		backlog(t, db, fmt.Sprintf("t%02d", i), 5)
	}
	seen := map[string]int{}
	for range 5 {
		n := byTenant(claimBatch(t, s, 4, true))
		if len(n) != 4 {
			t.Fatalf("a batch of 4 among 20 tenants: %v, want one task of each of 4 tenants", n)
		}
		for k, v := range n {
			seen[k] += v
		}
	}
	if len(seen) < 8 {
		t.Errorf("5 batches of 4 reached %d of 20 tenants: %v", len(seen), seen)
	}
}

// A tenant's cap bounds its running tasks: the claim takes what is left of
// it, gives the rest of the batch to the others, and takes more once a
// task finishes.
func TestFairShareCapsRunningTasks(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	s := claims.New(db)
	backlog(t, db, "a", 50)
	backlog(t, db, "b", 50)
	three := 3
	share(t, db, "a", 5, &three)

	got := claimBatch(t, s, 10, false)
	if n := byTenant(got); n["a"] != 3 || n["b"] != 7 {
		t.Fatalf("a capped at 3: %v, want a 3, b 7", n)
	}
	if n := byTenant(claimBatch(t, s, 10, true)); n["a"] != 0 || n["b"] != 10 {
		t.Fatalf("a at its cap: %v, want b 10 only", n)
	}
	for _, task := range got {
		if task.Tenant == "a" {
			if err := s.Succeed(context.Background(), claims.LeaseOf(task), raw(`{}`)); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	if n := byTenant(claimBatch(t, s, 10, true)); n["a"] != 1 || n["b"] != 9 {
		t.Fatalf("one of a's finished: %v, want a 1, b 9", n)
	}
}

// The cap holds under concurrent claims: 16 connections claim and finish
// tasks of two tenants as fast as they can, and tenant a, capped at 5, never
// has more than 5 tasks leased at once — not by the claims' own count
// (increased once a claim returns, decreased before its task's completion
// is sent, so never above the database's), nor in any snapshot a watcher
// takes.
func TestFairShareCapHoldsUnderConcurrentClaims(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(testdb.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	const workers, capA, tasks = 16, 5, 1500
	cfg.MaxConns = workers + 2
	db, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	backlog(t, db, "a", tasks)
	backlog(t, db, "b", tasks)
	capped := capA
	share(t, db, "a", 3, &capped)

	watch := &capWatch{tenant: "a"}
	var wg sync.WaitGroup
	errs := make(chan error, workers+1)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := claims.New(db)
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for watch.done.Load() < 2*tasks {
				got, err := s.Claim(ctx, claims.ClaimParams{Queue: "default", Worker: fmt.Sprint("w", w),
					Limit: 1 + rng.IntN(4), Lease: time.Minute, DueOnly: rng.IntN(2) == 0})
				if err != nil {
					errs <- err
					return
				}
				watch.claimed(got)
				if err := watch.finish(ctx, s, got); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	stop := make(chan struct{})
	var watched, watchMost int64
	go func() {
		defer close(errs)
		for {
			select {
			case <-stop:
				return
			default:
			}
			var n int64
			if err := db.QueryRow(ctx, `SELECT count(*) FROM tasks WHERE tenant = 'a' AND state = 'running'`).Scan(&n); err != nil {
				errs <- err
				return
			}
			watched++
			watchMost = max(watchMost, n)
		}
	}()
	wg.Wait()
	close(stop)
	for err := range errs {
		t.Fatal(err)
	}
	if m := watch.most.Load(); m > capA || watchMost > capA {
		t.Fatalf("tenant a, capped at %d, had %d tasks leased at once (the watcher saw %d)", capA, m, watchMost)
	}
	if watch.most.Load() < 2 {
		t.Errorf("tenant a never had more than %d task leased: the test did not contend", watch.most.Load())
	}
	t.Logf("tenant a: at most %d leased by the claims' count, %d in %d snapshots", watch.most.Load(), watchMost, watched)
}

// capWatch counts one tenant's tasks leased at once as concurrent claimers
// see them: up when a claim returns them, down before each completion is
// sent, so never above the database's count; and all tasks finished.
type capWatch struct {
	tenant             string
	leased, most, done atomic.Int64
}

func (c *capWatch) claimed(tasks []*agentledger.Task) {
	for _, task := range tasks {
		if task.Tenant == c.tenant {
			n := c.leased.Add(1)
			for m := c.most.Load(); n > m && !c.most.CompareAndSwap(m, n); m = c.most.Load() {
			}
		}
	}
}

// finish completes the tasks one by one.
func (c *capWatch) finish(ctx context.Context, s *claims.Store, tasks []*agentledger.Task) error {
	for _, task := range tasks {
		if task.Tenant == c.tenant {
			c.leased.Add(-1)
		}
		if err := s.Succeed(ctx, claims.LeaseOf(task), raw(`{}`)); err != nil {
			return err
		}
		c.done.Add(1)
	}
	return nil
}

// A capped tenant's room is counted from its own running tasks: with
// 5,000 tasks of other tenants running, the count under the share row's
// lock reads a few pages, where reading every running task and keeping
// the tenant's cost a claim 0.8 ms for each capped tenant it reached
// (BENCHMARKS.md). The others' tasks are marked uncapped, as their claims
// mark them; a's are marked capped, and unknown (leased before this
// version), and both count. Both ways of counting — a crowd claim's turn,
// and the room of the capped tenants a full claim weighs — are asked, in a
// session set as the daemon's are (no sequential scans).
func TestACappedTenantsRoomIsCountedFromItsOwnRunningTasks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	five := 5
	share(t, db, "a", 2, &five)
	for _, q := range []string{
		`INSERT INTO tasks (tenant, queue, kind, state, attempt, lease_owner, lease_token, lease_expires_at, attempted_at, capped)
		 SELECT CASE WHEN g <= 3 THEN 'a' ELSE 'other' || g % 100 END, 'held', 'noop', 'running', 1, 'w', g,
			now() + interval '1 hour', now(), CASE WHEN g = 1 THEN NULL ELSE g <= 3 END
		 FROM generate_series(1, 5003) g`,
		`VACUUM ANALYZE tasks`,
	} {
		if _, err := db.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ name, sql string }{
		{"turn", `SELECT agentledger_tenant_turn('a')`},
		{"room", `SELECT room FROM agentledger_tenant_room(ARRAY['a'])`},
	} {
		t.Run(c.name, func(t *testing.T) {
			tx := daemonTx(t, db)
			var room int
			if err := tx.QueryRow(ctx, c.sql).Scan(&room); err != nil {
				t.Fatal(err)
			}
			if room != 2 {
				t.Fatalf("room %d, want 2 (a cap of 5, 3 running)", room)
			}
			// The same call again, explained: the pages it read, its
			// nested statements' included.
			var plan []map[string]any
			if err := tx.QueryRow(ctx, `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) `+c.sql).Scan(&plan); err != nil {
				t.Fatal(err)
			}
			top := plan[0]["Plan"].(map[string]any)
			pages := top["Shared Hit Blocks"].(float64) + top["Shared Read Blocks"].(float64)
			if pages > 20 {
				t.Errorf("counting a's room read %.0f pages: more than its own running tasks' (5,000 other tasks run on ~90 pages)", pages)
			}
		})
	}
}

// A claim marks each task it leases capped or not, as the task's tenant
// has a cap or not, by every claim statement: the full claim, the
// fair-share and run claims (a crowd of 100 thin tenants, one capped) and
// the one-tenant claim. What a cap counts follows: a capped tenant's
// running tasks, and no other's.
func TestClaimsMarkTheTasksOfCappedTenants(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	s := claims.New(db)
	for i := range 100 {
		backlog(t, db, fmt.Sprintf("t%03d", i), 2)
	}
	three := 3
	share(t, db, "t007", 1, &three)
	share(t, db, "t008", 2, nil) // a weight, no cap
	hint := &claims.ClaimHint{}
	for _, dueOnly := range []bool{false, true, true, true} {
		if _, err := s.Claim(ctx, claims.ClaimParams{Queue: "default", Worker: "w", Limit: 64, Lease: time.Minute,
			DueOnly: dueOnly, Hint: hint}); err != nil {
			t.Fatal(err)
		}
	}
	backlog(t, db, "solo", 3)
	if _, err := db.Exec(ctx, `UPDATE tasks SET queue = 'solo' WHERE tenant = 'solo'`); err != nil {
		t.Fatal(err)
	}
	solo := &claims.ClaimHint{}
	for range 3 {
		if _, err := s.Claim(ctx, claims.ClaimParams{Queue: "solo", Worker: "w", Limit: 1, Lease: time.Minute,
			DueOnly: true, Hint: solo}); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := db.Query(ctx, `SELECT tenant, capped, count(*) FROM tasks WHERE state = 'running'
		GROUP BY tenant, capped ORDER BY tenant, capped`)
	if err != nil {
		t.Fatal(err)
	}
	type mark struct {
		tenant string
		capped *bool
	}
	got := map[mark]int{}
	running := 0
	for rows.Next() {
		var m mark
		var n int
		if err := rows.Scan(&m.tenant, &m.capped, &n); err != nil {
			t.Fatal(err)
		}
		if m.capped != nil {
			b := *m.capped
			m.capped = &b
		}
		running += n
		if m.capped == nil || *m.capped != (m.tenant == "t007") {
			t.Errorf("%d running tasks of %s marked capped %v, want %v", n, m.tenant, fmtMark(m.capped), m.tenant == "t007")
		}
		got[m] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if running != 203 {
		t.Fatalf("%d tasks running, want all 203 claimed", running)
	}
	var room int
	if err := db.QueryRow(ctx, `SELECT agentledger_tenant_turn('t007')`).Scan(&room); err != nil {
		t.Fatal(err)
	}
	if room != 1 {
		t.Errorf("t007's room %d, want 1 (a cap of 3, 2 running)", room)
	}
}

func fmtMark(b *bool) string {
	if b == nil {
		return "unknown"
	}
	return fmt.Sprint(*b)
}

// A cap set on a tenant counts the tasks it already has running, which
// their claims marked uncapped: a new share row with a cap, and a cap
// added to a share row without one. Its other unfinished tasks marked
// uncapped (queued again after a claim) are marked unknown too, as a
// daemon of an earlier version would leave the mark when it claims them;
// its finished tasks are left as they are.
func TestACapCountsTheTasksAlreadyRunning(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	s := claims.New(db)
	backlog(t, db, "a", 4)
	backlog(t, db, "b", 4)
	share(t, db, "b", 2, nil)
	if got := claimBatch(t, s, 8, false); len(got) != 8 {
		t.Fatalf("claimed %d, want 8", len(got))
	}
	backlog(t, db, "a", 1)
	backlog(t, db, "b", 1)
	if _, err := db.Exec(ctx, `INSERT INTO tasks (tenant, kind, state, finished_at, capped)
		VALUES ('a', 'noop', 'succeeded', now(), false), ('b', 'noop', 'succeeded', now(), false)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `UPDATE tasks SET capped = false WHERE state = 'queued'`); err != nil {
		t.Fatal(err)
	}
	for _, tenant := range []string{"a", "b"} {
		six := 6
		share(t, db, tenant, 1, &six)
		var room int
		if err := db.QueryRow(ctx, `SELECT agentledger_tenant_turn($1)`, tenant).Scan(&room); err != nil {
			t.Fatal(err)
		}
		if room != 2 {
			t.Errorf("%s capped at 6 with 4 running: room %d, want 2", tenant, room)
		}
		if err := db.QueryRow(ctx, `SELECT room FROM agentledger_tenant_room(ARRAY[$1])`, tenant).Scan(&room); err != nil {
			t.Fatal(err)
		}
		if room != 2 {
			t.Errorf("%s capped at 6 with 4 running: agentledger_tenant_room %d, want 2", tenant, room)
		}
		var marks []string
		if err := db.QueryRow(ctx, `SELECT array_agg(state || ' ' || coalesce(capped::text, 'unknown') ORDER BY state)
			FROM tasks WHERE tenant = $1 AND state <> 'running'`, tenant).Scan(&marks); err != nil {
			t.Fatal(err)
		}
		if want := []string{"queued unknown", "succeeded false"}; !slices.Equal(marks, want) {
			t.Errorf("%s's other tasks after its cap: %v, want %v", tenant, marks, want)
		}
	}
}

// A new cap marks the tenant's unfinished tasks through the partial
// indexes of their states, never reading the table: finished tasks, kept
// for weeks, outnumber the others. In a session set as the daemons' and
// agentctl's are (no sequential scans where an index serves).
func TestANewCapReadsNoFinishedTasks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	if _, err := db.Exec(ctx, `INSERT INTO tasks (tenant, kind, state, finished_at, capped)
		SELECT 'a', 'noop', 'succeeded', now(), false FROM generate_series(1, 2000)`); err != nil {
		t.Fatal(err)
	}
	backlog(t, db, "a", 3)
	if _, err := db.Exec(ctx, `UPDATE tasks SET capped = false WHERE state = 'queued'`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `VACUUM ANALYZE tasks`); err != nil {
		t.Fatal(err)
	}
	tx := daemonTx(t, db)
	if _, err := tx.Exec(ctx, `INSERT INTO tenant_shares (tenant, weight, max_running, source) VALUES ('a', 1, 2, 'operator')`); err != nil {
		t.Fatal(err)
	}
	var seq, marked int
	if err := tx.QueryRow(ctx, `SELECT seq_scan FROM pg_stat_xact_user_tables WHERE relname = 'tasks'`).Scan(&seq); err != nil {
		t.Fatal(err)
	}
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM tasks WHERE tenant = 'a' AND capped IS NULL`).Scan(&marked); err != nil {
		t.Fatal(err)
	}
	if seq != 0 || marked != 3 {
		t.Errorf("a new cap read tasks in %d sequential scans and marked %d queued tasks unknown, want none and 3", seq, marked)
	}
}

// daemonTx begins a transaction planned as the daemons' and agentctl's
// sessions plan (no sequential scans where an index serves), rolled back
// when t ends.
func daemonTx(t *testing.T, db *pgxpool.Pool) pgx.Tx {
	t.Helper()
	ctx := context.Background()
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback(ctx) })
	if _, err := tx.Exec(ctx, `SET LOCAL enable_seqscan = off`); err != nil {
		t.Fatal(err)
	}
	return tx
}
