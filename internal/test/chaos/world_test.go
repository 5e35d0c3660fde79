package chaos

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger/database"
	"github.com/agentledger/agentledger/migrations"
	"github.com/agentledger/agentledger/pgembed"
)

// world is a private PostgreSQL cluster with a migrated database, and the
// agentd binary built from this tree.
type world struct {
	dir     string
	cluster *pgembed.Cluster
	url     string
	db      *pgxpool.Pool
	agentd  string
	// mcpcount is the counting MCP server each daemon starts over stdio.
	mcpcount string
}

// newWorld starts the cluster (its own: the drill restarts it, which the
// shared test cluster must never see) and builds agentd and the counting
// MCP server.
func newWorld(t *testing.T) *world {
	t.Helper()
	ctx := context.Background()
	w := &world{dir: worldDir(t)}
	var err error
	// Commits wait for their WAL to be written, as in production: the
	// drill crashes PostgreSQL, and a crash loses what was still in the
	// WAL buffers (an asynchronously committed claim may be lost; an
	// acknowledged commit may not). fsync stays off: a process crash loses
	// nothing the operating system was given.
	w.cluster, err = pgembed.Start(ctx, pgembed.Config{StateDir: filepath.Join(w.dir, "pg"),
		Settings: map[string]string{"fsync": "off", "max_connections": "300"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.cluster.Close(context.Background()) })
	admin, err := pgxpool.New(ctx, w.cluster.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, `CREATE DATABASE chaos`); err != nil {
		t.Fatal(err)
	}
	admin.Close()
	w.url = w.cluster.URL("chaos")
	w.prepare(t)
	return w
}

// worldDir is a world's state directory, removed when t ends.
func worldDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "agentledger-chaos-")
	if err != nil {
		t.Fatal(err)
	}
	// The server may run as another user (postgres, under root): it must
	// reach its state directory.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() && os.Getenv("CHAOS_KEEP") != "" {
			t.Logf("kept %s", dir)
			return
		}
		os.RemoveAll(dir)
	})
	return dir
}

// prepare opens the pool to w.url, migrates the database and builds the
// binaries.
func (w *world) prepare(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	// Opened as agentd and agentctl open theirs: each new connection
	// checks the server's identity, so that the harness's submissions
	// after a failover get ids no lost commit used (migration 00040).
	db, err := database.Open(ctx, database.Config{URL: w.url})
	if err != nil {
		t.Fatal(err)
	}
	w.db = db.Pool
	t.Cleanup(func() { db.Close(context.Background()) })
	m, err := migrations.New(w.db, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Up(ctx); err != nil {
		t.Fatal(err)
	}
	m.Close()

	w.agentd, w.mcpcount, err = binaries()
	if err != nil {
		t.Fatal(err)
	}
}

// built holds agentd and mcpcount, linked once for every drill: a link of
// agentd costs seconds of CPU, which the drills running beside it need.
// TestMain removes the directory.
var built struct {
	once                  sync.Once
	dir, agentd, mcpcount string
	err                   error
}

// binaries builds agentd and mcpcount on first use and returns their paths.
func binaries() (agentd, mcpcount string, err error) {
	built.once.Do(func() {
		built.dir, built.err = os.MkdirTemp("", "agentledger-chaos-bin-")
		if built.err != nil {
			return
		}
		if built.err = os.Chmod(built.dir, 0o755); built.err != nil {
			return
		}
		built.agentd, built.mcpcount = filepath.Join(built.dir, "agentd"), filepath.Join(built.dir, "mcpcount")
		for bin, pkg := range map[string]string{built.agentd: "cmd/agentd", built.mcpcount: "internal/test/mcpcount"} {
			out, err := exec.Command("go", "build", "-o", bin, "github.com/agentledger/agentledger/"+pkg).CombinedOutput()
			if err != nil {
				built.err = fmt.Errorf("building %s: %v\n%s", pkg, err, out)
				return
			}
		}
	})
	return built.agentd, built.mcpcount, built.err
}

// envInt reads a sizing variable.
func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q is not a whole number", name, v)
	}
	return n
}

// waitFor polls cond (a condition in other processes) until it holds.
func waitFor(t *testing.T, what string, limit time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		ok, status := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached in %s (%s)", what, limit, status)
		}
		time.Sleep(200 * time.Millisecond) // polling other processes
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func sprintf(format string, a ...any) string { return fmt.Sprintf(format, a...) }
