package main

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentledger/agentledger/internal/test/testdb"
)

// migrationLock is the advisory lock agentd's migrations take (package
// migrations' lockID).
const migrationLock int64 = 0x6167656e746c6564

// PostgreSQL cuts agentd's connection while it migrates at start (a
// restart, an administrator's pg_terminate_backend: 57P01). Start-up says
// so and tries again, and the daemon comes up; it exited with status 1.
func TestStartupRetriesACutConnection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.Empty(t)
	admin := testdb.Open(t, url)
	// Holding the migrations' lock keeps agentd's migration waiting on its
	// connection, where the test finds it and cuts it.
	lock, err := admin.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	if _, err := lock.Exec(ctx, "SELECT pg_advisory_lock($1)", migrationLock); err != nil {
		t.Fatal(err)
	}

	cmd := agentd(t, []string{"DATABASE_URL=" + url}, "--grace", "300ms")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill() //nolint:errcheck // a no-op once it has exited
	logs := lines(stderr)

	var pid int32
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := admin.QueryRow(ctx, `SELECT pid FROM pg_stat_activity
			WHERE datname = current_database() AND pid NOT IN ($1, pg_backend_pid())
			AND query LIKE 'SELECT pg_try_advisory_lock%'`,
			lock.Conn().PgConn().PID()).Scan(&pid)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("agentd's migration never asked for the lock: %v", err)
		}
		time.Sleep(10 * time.Millisecond) // polling another process
	}
	var cut bool
	if err := admin.QueryRow(ctx, "SELECT pg_terminate_backend($1)", pid).Scan(&cut); err != nil || !cut {
		t.Fatalf("pg_terminate_backend(%d): %v %v", pid, cut, err)
	}
	if _, err := lock.Exec(ctx, "SELECT pg_advisory_unlock($1)", migrationLock); err != nil {
		t.Fatal(err)
	}

	retried := waitLogLine(t, logs, "start-up: the database is unavailable; trying again")
	for _, want := range []string{"step=migrating", "57P01"} {
		if !strings.Contains(retried, want) {
			t.Errorf("the retry's log line lacks %q: %s", want, retried)
		}
	}
	waitLog(t, logs, "worker started")
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for range logs {
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("agentd exited with %v after SIGTERM, want 0", err)
	}
}

// waitLogLine returns the first log line containing want.
func waitLogLine(t *testing.T, logs <-chan string, want string) string {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-logs:
			if !ok {
				t.Fatalf("agentd exited before logging %q", want)
			}
			if strings.Contains(l, want) {
				return l
			}
		case <-timeout:
			t.Fatalf("agentd did not log %q within 30s", want)
		}
	}
}
