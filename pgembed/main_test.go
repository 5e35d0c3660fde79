package pgembed

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testSettings keep test clusters small and fast.
var testSettings = map[string]string{"fsync": "off", "shared_buffers": "16MB", "max_connections": "20"}

// newStateDir makes a fresh state directory the postgres user can traverse,
// and on cleanup kills any server left in it and removes it.
func newStateDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pgembed-test-*")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		forceStop(t, dir)
		os.RemoveAll(dir)
	})
	return dir
}

// forceStop stops, without ceremony, a server a failed test left running.
func forceStop(t *testing.T, dir string) {
	l := layout{root: dir}
	if _, err := os.Stat(l.pidFile()); err != nil {
		return
	}
	bin, err := FindBinaries("")
	if err != nil {
		return
	}
	c := &Cluster{layout: l, binDir: bin}
	if os.Geteuid() == 0 {
		c.runAs, _ = lookupRunAs("")
	}
	out, err := c.run(context.Background(), "pg_ctl", "-D", l.dataDir(), "-m", "immediate", "-w", "stop")
	t.Logf("cleanup: stopped a leftover server: %v %s", err, out)
}

// testConfig returns a Config for dir whose logs go to the test output and to logs (if not nil).
func testConfig(t *testing.T, dir string, logs io.Writer) Config {
	var w io.Writer = t.Output()
	if logs != nil {
		w = io.MultiWriter(w, logs)
	}
	return Config{
		StateDir: dir,
		Settings: testSettings,
		Logger:   slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
}

// startT starts a cluster in dir and closes it on cleanup.
func startT(t *testing.T, dir string) *Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	c, err := Start(ctx, testConfig(t, dir, nil))
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// closeT closes c and fails the test on error.
func closeT(t *testing.T, c *Cluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := c.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// connectT connects to database db of c and closes the connection on cleanup.
func connectT(t *testing.T, c *Cluster, db string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), c.URL(db))
	if err != nil {
		t.Fatalf("connect to %s: %v", db, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// pidFileExists reports whether the cluster's postmaster.pid exists.
func pidFileExists(t *testing.T, dir string) bool {
	t.Helper()
	_, err := os.Stat(filepath.Join(dir, "pgdata", "postmaster.pid"))
	return err == nil
}

// postmasterPID returns the pid in postmaster.pid.
func postmasterPID(t *testing.T, dir string) int {
	t.Helper()
	pi, exists, err := readPidFile(layout{root: dir}.pidFile())
	if !exists || err != nil {
		t.Fatalf("postmaster.pid: exists=%v err=%v", exists, err)
	}
	return pi.pid
}
