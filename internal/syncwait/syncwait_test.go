package syncwait_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentledger/agentledger/internal/syncwait"
	"github.com/agentledger/agentledger/internal/test/syncrep"
)

// A server that speaks German says so in German when a commit's wait for
// the standby is cancelled, and the connection is still marked: a claim
// committed on the primary only must not start its tasks whatever the
// server's lc_messages.
func TestACancelledWaitIsHeardInAnotherLanguage(t *testing.T) {
	t.Setenv("LOCPATH", localeDir(t, "de_DE", "UTF-8"))
	url, admin := syncrep.Server(t)
	ctx := context.Background()

	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	const app = "german"
	cfg.RuntimeParams["application_name"] = app
	var mu sync.Mutex
	var heard []*pgconn.Notice
	cfg.OnNotice = func(c *pgconn.PgConn, n *pgconn.Notice) {
		mu.Lock()
		heard = append(heard, n)
		mu.Unlock()
		syncwait.OnNotice(c, n)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `SET lc_messages = 'de_DE.UTF-8'`); err != nil {
		t.Fatal(err)
	}

	committed := make(chan error, 1)
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		_, err := conn.Exec(ctx, `SELECT pg_logical_emit_message(true, 'agentledger-test', '')`)
		committed <- err
	}()
	pid := syncrep.Waiting(t, admin, app, returned)
	if pid == 0 {
		t.Fatalf("the commit returned without waiting for the standby: %v", <-committed)
	}
	syncrep.End(t, admin, "pg_cancel_backend", pid)
	if err := <-committed; err != nil {
		t.Fatalf("a cancelled wait reports success (the commit is kept on the primary), got %v", err)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(heard) != 1 {
		t.Fatalf("heard %d notices, want the cancelled wait's one: %+v", len(heard), heard)
	}
	if n := heard[0]; !strings.Contains(n.Message, "synchrone Replikation") {
		t.Fatalf("the server did not speak German (lc_messages): %q", n.Message)
	}
	if !syncwait.Cancelled(conn.PgConn()) {
		t.Fatalf("the cancelled wait's warning in German (%q, routine %q) did not mark the connection", heard[0].Message, heard[0].Routine)
	}
	if syncwait.Cancelled(conn.PgConn()) {
		t.Fatal("the mark was not cleared by asking")
	}
}

// localeDir builds locale name.charset from the C library's sources into
// a directory the server (another user, under root) can read, for LOCPATH.
func localeDir(t *testing.T, name, charset string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "agentledger-locale-") // not t.TempDir, whose parent only we may enter
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("localedef", "-i", name, "-f", charset, filepath.Join(dir, name+"."+charset)).CombinedOutput()
	if err != nil {
		t.Fatalf("building the %s.%s locale (localedef, the C library's locale sources): %v\n%s", name, charset, err, out)
	}
	return dir
}
