// Package syncrep runs tests against a server whose synchronous standby
// never comes: every commit that waits for it waits until the test ends
// the wait, as a primary's shutdown (pg_terminate_backend) or an
// operator's cancel (pg_cancel_backend) would.
package syncrep

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger/internal/syncwait"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

// Server starts a private migrated database whose server waits for a
// synchronous standby that never comes, and returns its URL and an admin
// pool (application "admin") that watches and ends the waits.
func Server(t *testing.T) (url string, admin *pgxpool.Pool) {
	t.Helper()
	url = testdb.Private(t, map[string]string{"fsync": "off"})
	admin = Open(t, url, "admin")
	Hold(t, admin)
	return url, admin
}

// Hold makes every commit that waits for the standby wait, from now on.
//
// A session's setting is not enough to know that: a commit waits only
// once the checkpointer, in its own time after the reload, has told the
// shared state that synchronous standbys are named. So Hold commits a
// write of its own until that commit waits, and then cancels its wait.
func Hold(t *testing.T, admin *pgxpool.Pool) {
	t.Helper()
	exec(t, admin, `ALTER SYSTEM SET synchronous_standby_names = 'phantom'`)
	exec(t, admin, `SELECT pg_reload_conf()`)
	awaitSetting(t, admin, "synchronous_standby_names", "phantom")
	ctx := context.Background()
	conn, err := admin.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	var pid int
	if err := conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !commitWaits(t, admin, conn.Conn(), pid) {
		if time.Now().After(deadline) {
			t.Fatal("commits do not wait for the standby 30 s after synchronous_standby_names was set")
		}
		time.Sleep(10 * time.Millisecond) // polling the server's state
	}
}

// commitWaits commits a write on conn (backend pid) and reports whether
// its commit waited for the standby; a wait it cancels, so the commit
// completes (on the primary only).
func commitWaits(t *testing.T, admin *pgxpool.Pool, conn *pgx.Conn, pid int) bool {
	t.Helper()
	returned := make(chan struct{})
	var err error
	go func() {
		defer close(returned)
		// An empty transactional message: a write, so its commit may wait.
		_, err = conn.Exec(context.Background(), `SELECT pg_logical_emit_message(true, 'agentledger-test-hold', '')`)
	}()
	waited := awaitSyncRep(t, admin, "pid = $1::int4", pid, returned) != 0
	if waited {
		End(t, admin, "pg_cancel_backend", pid)
	}
	<-returned
	if err != nil {
		t.Fatal(err)
	}
	return waited
}

// Open opens a pool to url whose sessions name themselves app and whose
// notices are heard as agentd's are (database.Open).
func Open(t *testing.T, url, app string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = app
	cfg.ConnConfig.OnNotice = syncwait.OnNotice
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func exec(t *testing.T, db *pgxpool.Pool, sql string) {
	t.Helper()
	if _, err := db.Exec(context.Background(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// awaitSetting waits until a new session sees the server's setting name
// at want (a reload reaches the postmaster's children in its own time).
func awaitSetting(t *testing.T, db *pgxpool.Pool, name, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := db.Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var got string
		err = conn.QueryRow(context.Background(), `SELECT current_setting($1)`, name).Scan(&got)
		conn.Conn().Close(context.Background()) // the next try in a new session
		conn.Release()
		switch {
		case err != nil:
			t.Fatal(err)
		case got == want:
			return
		case time.Now().After(deadline):
			t.Fatalf("%s is %q 30 s after the reload, want %q", name, got, want)
		}
		time.Sleep(10 * time.Millisecond) // polling the server's state, not waiting out a race
	}
}

// Waiting waits until a backend of application app waits for the
// synchronous standby, and returns its pid; or returns 0 once returned is
// closed (the call it watches returned without waiting).
func Waiting(t *testing.T, admin *pgxpool.Pool, app string, returned <-chan struct{}) int {
	t.Helper()
	return awaitSyncRep(t, admin, "application_name = $1::text", app, returned)
}

// awaitSyncRep waits until a backend that where (a condition on
// pg_stat_activity of arg, $1) selects waits for the synchronous standby,
// and returns its pid; or returns 0 once returned is closed.
func awaitSyncRep(t *testing.T, admin *pgxpool.Pool, where string, arg any, returned <-chan struct{}) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var pid int
		err := admin.QueryRow(context.Background(), `SELECT coalesce(max(pid), 0) FROM pg_stat_activity
			WHERE `+where+` AND wait_event = 'SyncRep'`, arg).Scan(&pid)
		if err != nil {
			t.Fatal(err)
		}
		if pid != 0 {
			return pid
		}
		select {
		case <-returned:
			return 0
		case <-time.After(5 * time.Millisecond): // polling the server's state
		}
		if time.Now().After(deadline) {
			t.Fatalf("no backend (%s, $1 = %v) waits for the standby after 30 s", where, arg)
		}
	}
}

// End ends backend pid's wait by fn: "pg_terminate_backend" (as a fast
// shutdown does) or "pg_cancel_backend" (as an operator's cancel or a
// statement_timeout does).
func End(t *testing.T, admin *pgxpool.Pool, fn string, pid int) {
	t.Helper()
	var ok bool
	if err := admin.QueryRow(context.Background(), `SELECT `+fn+`($1)`, pid).Scan(&ok); err != nil || !ok {
		t.Fatalf("%s(%d): %v, %v", fn, pid, ok, err)
	}
}

// Release lets every commit through: the server stops waiting for the
// standby, and the waits under way end as if it had answered.
func Release(t *testing.T, admin *pgxpool.Pool) {
	t.Helper()
	exec(t, admin, `ALTER SYSTEM RESET synchronous_standby_names`)
	exec(t, admin, `SELECT pg_reload_conf()`)
	awaitSetting(t, admin, "synchronous_standby_names", "")
}

// AwaitsStandby runs do, which must wait for the standby before it
// returns (what names it): it fails t if do returns first; else it lets
// the standby answer (Release) and waits for do to return.
func AwaitsStandby(t *testing.T, admin *pgxpool.Pool, app, what string, do func()) {
	t.Helper()
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		do()
	}()
	if Waiting(t, admin, app, returned) == 0 {
		t.Fatalf("%s returned without waiting for the standby", what)
	}
	Release(t, admin)
	<-returned
}
