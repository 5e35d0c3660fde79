package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/migrations"
	"github.com/agentledger/agentledger/pgembed"
)

// agentd 2>&1 | tee log, then Ctrl-C: the signal ends tee as well, and the
// daemon's next log line meets a pipe with no reader. It still shuts down
// as it should: exit 0, the running tasks released (queued again), the
// embedded PostgreSQL it started stopped.
func TestShutdownWithOutputPipeGone(t *testing.T) {
	t.Parallel()
	dir := embeddedStateDir(t)
	ids := seedEmbedded(t, dir, 3, `{"ms":600000}`)

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := agentd(t, []string{"DATABASE_URL=", "AGENTLEDGER_STATE_DIR=" + dir}, "--listen", "", "--grace", "300ms",
		"--worker-id", "piped")
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill() //nolint:errcheck // a no-op once it has exited
	w.Close()
	logs := lines(r)
	waitLog(t, logs, "worker started")
	postmaster := postmasterPID(t, dir)
	s, closeDB := embeddedStore(t, dir)
	for _, id := range ids {
		waitTask(t, s, id, agentledger.StateRunning)
	}
	closeDB()

	r.Close() // tee is gone
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("agentd ended with %v after SIGINT with its output pipe gone, want exit status 0", err)
	}
	if pid := postmasterPIDIfAny(dir); pid != 0 {
		t.Fatalf("the embedded PostgreSQL (pid %d) was not stopped: its postmaster.pid is still there", pid)
	}
	waitProcessGone(t, postmaster)
	s, closeDB = embeddedStore(t, dir)
	defer closeDB()
	for _, id := range ids {
		got, err := s.Get(context.Background(), "", id)
		if err != nil {
			t.Fatal(err)
		}
		if got.State != agentledger.StateQueued || got.LeaseOwner != "" {
			t.Errorf("task %d after shutdown: %s owned by %q, want queued and released", id, got.State, got.LeaseOwner)
		}
	}
}

// embeddedStateDir makes a state directory for an embedded cluster that
// the postgres user can enter (as root the server runs as that user), and
// on cleanup stops any server left in it.
func embeddedStateDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "agentd-test-*")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if pid := postmasterPIDIfAny(dir); pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGQUIT) // immediate shutdown of a server a failed test left
		}
		os.RemoveAll(dir)
	})
	return dir
}

// seedEmbedded migrates the embedded cluster in dir and enqueues n sleep
// tasks with payload, then lets go of the cluster (it stops).
func seedEmbedded(t *testing.T, dir string, n int, payload string) []int64 {
	t.Helper()
	s, closeDB := embeddedStore(t, dir)
	defer closeDB()
	var ids []int64
	for range n {
		r, err := s.Enqueue(context.Background(), claims.EnqueueParams{Kind: "sleep", Payload: json.RawMessage(payload)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.Task.ID)
	}
	return ids
}

// embeddedStore joins (or starts) the embedded cluster in dir, migrated,
// and returns a task store over it and the function that lets go of it.
func embeddedStore(t *testing.T, dir string) (*claims.Store, func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := pgembed.Start(ctx, pgembed.Config{StateDir: dir, Settings: map[string]string{"fsync": "off"}})
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, c.URL(pgembed.DatabaseName))
	if err == nil {
		var m *migrations.Migrator
		if m, err = migrations.New(pool, nil); err == nil {
			_, err = m.Up(ctx)
			m.Close()
		}
	}
	closeDB := func() {
		if pool != nil {
			pool.Close()
		}
		if err := c.Close(context.Background()); err != nil {
			t.Errorf("closing the embedded cluster: %v", err)
		}
	}
	if err != nil {
		closeDB()
		t.Fatal(err)
	}
	return claims.New(pool), closeDB
}

// postmasterPID returns the pid of the embedded cluster's server in dir.
func postmasterPID(t *testing.T, dir string) int {
	t.Helper()
	pid := postmasterPIDIfAny(dir)
	if pid <= 0 {
		t.Fatalf("no postmaster.pid in %s", dir)
	}
	return pid
}

func postmasterPIDIfAny(dir string) int {
	f, err := os.Open(filepath.Join(dir, "pgdata", "postmaster.pid"))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var pid int
	if sc.Scan() {
		pid, _ = strconv.Atoi(sc.Text())
	}
	return pid
}

// waitProcessGone waits for pid to exit: pg_ctl stop returns once the
// server removed its postmaster.pid, just before its process ends.
func waitProcessGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil || strings.Contains(string(stat), ") Z ") { // gone, or a zombie not yet reaped
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d still runs: %s", pid, stat)
		}
		time.Sleep(10 * time.Millisecond) // polling another process
	}
}
