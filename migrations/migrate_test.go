package migrations_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/migrations"
)

func TestMain(m *testing.M) { testdb.Main(m) }

func tables(t *testing.T, pool *pgxpool.Pool) map[string]bool {
	t.Helper()
	rows, err := pool.Query(context.Background(),
		`SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename <> $1`, migrations.TableName)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		out[n] = true
	}
	return out
}

func newMigrator(t *testing.T, pool *pgxpool.Pool) *migrations.Migrator {
	t.Helper()
	m, err := migrations.New(pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// Up, down to nothing, and up again: every down migration undoes its up.
func TestUpDownUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.Open(t, testdb.Empty(t))
	m := newMigrator(t, pool)

	applied, err := m.Up(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(applied) == 0 || applied[len(applied)-1] != m.Latest() {
		t.Fatalf("applied %v, latest %d", applied, m.Latest())
	}
	if ts := tables(t, pool); !ts["tasks"] || !ts["task_attempts"] {
		t.Fatalf("tables after up: %v", ts)
	}
	st, err := m.Status(ctx)
	if err != nil || len(st) != len(applied) || !st[0].Applied || st[0].Name != "00001_tasks.sql" {
		t.Fatalf("status %+v %v", st, err)
	}
	again, err := m.Up(ctx)
	if err != nil || len(again) != 0 {
		t.Fatalf("second up applied %v (%v), want nothing", again, err)
	}

	var id string
	var from *int64
	if err := pool.QueryRow(ctx, `SELECT id::text, keys_scoped_from FROM installation`).Scan(&id, &from); err != nil ||
		from == nil || *from != 0 {
		t.Fatalf("a new database's installation: %s scoped from %v (%v), want from 0", id, from, err)
	}
	if _, err := m.DownTo(ctx, 0); err != nil {
		t.Fatal(err)
	}
	// But the installation, which is data (a down of 00042 alone keeps
	// its identity: TestScopedKeysShutOutOlderReleases).
	if ts := tables(t, pool); len(ts) != 1 || !ts["installation"] {
		t.Fatalf("tables left after down: %v, want the installation alone", ts)
	}
	var funcs int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_proc WHERE proname LIKE 'agentledger_%'`).Scan(&funcs); err != nil || funcs != 0 {
		t.Fatalf("%d functions left after down (%v)", funcs, err)
	}
	if v, _ := m.Version(ctx); v != 0 {
		t.Fatalf("version after down = %d", v)
	}
	if _, err := m.Up(ctx); err != nil {
		t.Fatalf("up after down: %v", err)
	}
	// Made from nothing again: another database, whose task ids start
	// again, so another identity, scoped from its first task.
	var anew string
	if err := pool.QueryRow(ctx, `SELECT id::text, keys_scoped_from FROM installation`).Scan(&anew, &from); err != nil ||
		anew == id || from == nil || *from != 0 {
		t.Fatalf("the installation after down and up: %s from %v (%v), want a new one from 0", anew, from, err)
	}
}

// Once a database's keys are scoped, a release before migration 00042
// cannot connect: its connections' check, agentledger_guard_ids, fails as
// a server not ready (which that release does not let through), while
// this release's, agentledger_check_ids, passes. Down from 00042 is
// refused while tasks whose keys were scoped remain; with none, it keeps
// the identity and unscopes the keys.
func TestScopedKeysShutOutOlderReleases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, m := migratedAnew(t)
	var next *int64
	_, err := pool.Exec(ctx, `SELECT agentledger_guard_ids()`)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "57P03" || !strings.Contains(pe.Message, "an agentd or agentctl of an older release") {
		t.Fatalf("an older release's check on scoped keys: %v, want 57P03", err)
	}
	if err := pool.QueryRow(ctx, `SELECT agentledger_check_ids()`).Scan(&next); err != nil {
		t.Fatalf("this release's check: %v", err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO tasks (tenant, queue, kind) VALUES ('default', 'default', 'echo')`); err != nil {
		t.Fatal(err)
	}
	_, err = m.DownTo(ctx, 41)
	var guard *migrations.GuardError
	if !errors.As(err, &guard) || guard.Version != 42 || !strings.Contains(err.Error(), "an effect sent again would go under another key") {
		t.Fatalf("down with tasks whose keys were scoped: %v, want version 42's guard to refuse it", err)
	}
	// Refused by its guard before anything was rolled back: the schema is
	// whole for the daemons running on it.
	if v, verr := m.Version(ctx); v != m.Latest() {
		t.Fatalf("after the refusal: at version %d (%v), want %d: nothing rolled back", v, verr, m.Latest())
	}
	var id string
	if err := pool.QueryRow(ctx, `SELECT id::text FROM installation`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `DELETE FROM tasks`); err != nil {
		t.Fatal(err)
	}
	// A notification not delivered yet outlives its task: its key may
	// still be sent.
	if _, err := pool.Exec(ctx, `INSERT INTO outbox (tenant, task_id, generation, attempt, event, step_path, channel, payload)
		VALUES ('default', 1, 1, 1, 'message', 'tool/0', 'ops', '{}')`); err != nil {
		t.Fatal(err)
	}
	if _, err = m.DownTo(ctx, 41); err == nil || !strings.Contains(err.Error(), "an effect sent again would go under another key") {
		t.Fatalf("down with a notification not delivered: %v, want it refused", err)
	}
	if _, err := pool.Exec(ctx, `DELETE FROM outbox`); err != nil {
		t.Fatal(err)
	}
	if _, err := m.DownTo(ctx, 41); err != nil {
		t.Fatal(err)
	}
	var kept string
	var from *int64
	if err := pool.QueryRow(ctx, `SELECT id::text, keys_scoped_from FROM installation`).Scan(&kept, &from); err != nil || kept != id || from != nil {
		t.Fatalf("after down: %s from %v (%v), want %s unscoped", kept, from, err, id)
	}
	if err := pool.QueryRow(ctx, `SELECT agentledger_guard_ids()`).Scan(&next); err != nil {
		t.Fatalf("the older release's check below 00042: %v", err)
	}
	if _, err := m.Up(ctx); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(ctx, `SELECT id::text, keys_scoped_from FROM installation`).Scan(&kept, &from); err != nil || kept != id || from != nil {
		t.Fatalf("up again: %s from %v (%v), want %s unscoped, for agentctl scope-keys", kept, from, err, id)
	}
	if err := pool.QueryRow(ctx, `SELECT agentledger_guard_ids()`).Scan(&next); err != nil {
		t.Fatalf("an older release's check on unscoped keys: %v", err)
	}
}

// A database that existed before migration 00042 — with tasks or none
// (retention may have deleted them all while daemons of the older
// release still run) — is left unscoped for agentctl scope-keys.
func TestAnExistingDatabaseIsNotScoped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.Open(t, testdb.Empty(t))
	m := newMigrator(t, pool)
	if _, err := m.UpTo(ctx, 41); err != nil {
		t.Fatal(err)
	}
	applied, err := m.Up(ctx)
	if err != nil || len(applied) != int(m.Latest()-41) {
		t.Fatalf("up from 41: %v %v", applied, err)
	}
	var from *int64
	if err := pool.QueryRow(ctx, `SELECT keys_scoped_from FROM installation`).Scan(&from); err != nil || from != nil {
		t.Fatalf("scoped from %v (%v), want unscoped", from, err)
	}
}

// Daemons starting together: the advisory lock lets one apply, the others
// find nothing left to do.
func TestConcurrentUp(t *testing.T) {
	t.Parallel()
	url := testdb.Empty(t)
	var wg sync.WaitGroup
	results := make([][]int64, 4)
	errs := make([]error, 4)
	for i := range 4 {
		pool := testdb.Open(t, url)
		m := newMigrator(t, pool)
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = m.Up(context.Background())
		}()
	}
	wg.Wait()
	total := 0
	for i := range 4 {
		if errs[i] != nil {
			t.Fatalf("migrator %d: %v", i, errs[i])
		}
		total += len(results[i])
	}
	if want := len(migrationsList(t)); total != want {
		t.Fatalf("%d migrations applied in all, want %d (each exactly once)", total, want)
	}
}

func migrationsList(t *testing.T) []migrations.Status {
	t.Helper()
	m := newMigrator(t, testdb.Open(t, testdb.Empty(t)))
	st, err := m.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestFingerprintIsStable(t *testing.T) {
	t.Parallel()
	if a, b := migrations.Fingerprint(), migrations.Fingerprint(); a != b || len(a) != 12 {
		t.Fatalf("fingerprint %q / %q", a, b)
	}
}

// A schema taken down to nothing and made again over two runs (a start-up
// stopped half-way) is another database, whose task ids start again: a new
// identity, unscoped until agentctl scope-keys. A restore (both the
// installation's table and the tasks table made anew) keeps it. And no
// down past 00042 while a daemon is live: it keeps the scope it read.
func TestTheInstallationFollowsItsTables(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, m := migratedAnew(t)
	read := func() (string, *int64) {
		t.Helper()
		var id string
		var from *int64
		if err := pool.QueryRow(ctx, `SELECT id::text, keys_scoped_from FROM installation`).Scan(&id, &from); err != nil {
			t.Fatal(err)
		}
		return id, from
	}
	first, _ := read()

	if _, err := pool.Exec(ctx, `INSERT INTO workers (id, host, pid, started_at, seen_at, queues, kinds)
		VALUES ('w1', 'h', 1, now(), now(), '{default}', '{echo}')`); err != nil {
		t.Fatal(err)
	}
	if _, err := m.DownTo(ctx, 41); err == nil || !strings.Contains(err.Error(), "agentd is running on this database") {
		t.Fatalf("down with a live daemon: %v, want it refused", err)
	}
	// Unscoped too: a running daemon keeps the scope it read whichever it is.
	if _, err := pool.Exec(ctx, `UPDATE installation SET keys_scoped_from = NULL`); err != nil {
		t.Fatal(err)
	}
	if _, err := m.DownTo(ctx, 0); err == nil || !strings.Contains(err.Error(), "agentd is running on this database") {
		t.Fatalf("down to nothing with a live daemon: %v, want it refused", err)
	}
	if _, err := pool.Exec(ctx, `DELETE FROM workers`); err != nil {
		t.Fatal(err)
	}

	if _, err := m.DownTo(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := m.UpTo(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Up(ctx); err != nil {
		t.Fatal(err)
	}
	second, from := read()
	if second == first || from != nil {
		t.Fatalf("made again over two runs: %s from %v, want a new identity (not %s), unscoped", second, from, first)
	}

	// As a restore leaves them: both tables other than recorded.
	if _, err := pool.Exec(ctx, `UPDATE installation SET keys_scoped_from = 7, tasks_table = 1, own_table = 2`); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Up(ctx); err != nil {
		t.Fatal(err)
	}
	if id, from := read(); id != second || from == nil || *from != 7 {
		t.Fatalf("restored: %s from %v, want %s from 7 kept", id, from, second)
	}
}

// migratedAnew is an empty database migrated up by this release, and its
// migrator.
func migratedAnew(t *testing.T) (*pgxpool.Pool, *migrations.Migrator) {
	t.Helper()
	pool := testdb.Open(t, testdb.Empty(t))
	m := newMigrator(t, pool)
	if _, err := m.Up(context.Background()); err != nil {
		t.Fatal(err)
	}
	return pool, m
}
