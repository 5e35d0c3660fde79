package testdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/agentledger/agentledger/database"
	"github.com/agentledger/agentledger/migrations"
	"github.com/agentledger/agentledger/pgembed"
)

// settings make the throwaway test cluster fast: test data need not survive
// a machine crash.
var settings = map[string]string{
	"fsync":              "off",
	"synchronous_commit": "off",
	"full_page_writes":   "off",
	"max_connections":    "500",
}

var (
	once     sync.Once
	initErr  error
	server   *url.URL // admin URL; Path is replaced per database
	admin    *pgxpool.Pool
	cluster  *pgembed.Cluster
	template string
)

// Main runs the tests of a package, then stops the shared cluster (if this
// binary is its last user) and fails the run on leaked goroutines. Call it
// from TestMain.
//
// A daemon started with neither a state directory nor a notification file
// keeps its console sink's notifications in the default state directory
// (/var/lib/agentledger as root): unless the environment names one, the
// package's tests get a state directory of their own, removed after them,
// so that no test writes into the user's.
func Main(m *testing.M) {
	var state string
	if os.Getenv(pgembed.StateDirEnv) == "" {
		dir, err := os.MkdirTemp("", "agentledger-state-")
		if err != nil {
			fmt.Fprintf(os.Stderr, "testdb: a state directory for the tests: %v\n", err)
			os.Exit(1)
		}
		state = dir
		os.Setenv(pgembed.StateDirEnv, dir)
	}
	code := m.Run()
	shutdown()
	if state != "" {
		os.RemoveAll(state)
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

func shutdown() {
	if admin != nil {
		admin.Close()
	}
	if cluster != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := cluster.Close(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "testdb: stopping cluster: %v\n", err)
		}
	}
}

func setup() error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	raw := os.Getenv("TEST_DATABASE_URL")
	if raw == "" {
		dir := os.Getenv("AGENTLEDGER_TEST_STATE_DIR")
		if dir == "" {
			dir = filepath.Join(os.TempDir(), fmt.Sprintf("agentledger-test-%d", os.Getuid()))
		}
		c, err := pgembed.Start(ctx, pgembed.Config{StateDir: dir, Settings: settings})
		if err != nil {
			return err
		}
		cluster = c
		raw = c.URL("postgres")
	}
	u, err := url.Parse(raw)
	if err != nil { // url.Error quotes the URL, password included
		return fmt.Errorf("TEST_DATABASE_URL is not a postgres:// URL")
	}
	server = u
	admin, err = pgxpool.New(ctx, raw)
	if err != nil {
		return err
	}
	template = "agentledger_tmpl_" + migrations.Fingerprint()
	return ensureTemplate(ctx)
}

// ensureTemplate builds the migrated template once per schema version. It is
// built under another name and renamed, so a binary killed half-way never
// leaves a broken template behind.
func ensureTemplate(ctx context.Context) error {
	conn, err := admin.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	const lockKey = 0x74657374646231 // "testdb1"
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", lockKey); err != nil {
		return err
	}
	defer conn.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", lockKey) //nolint:errcheck
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", template).Scan(&exists); err != nil {
		return err
	}
	if exists {
		return nil
	}
	build := template + "_build"
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{build}.Sanitize()+" WITH (FORCE)"); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{build}.Sanitize()); err != nil {
		return err
	}
	if err := migrate(ctx, URLFor(build)); err != nil {
		return fmt.Errorf("testdb: migrating template: %w", err)
	}
	_, err = conn.Exec(ctx, fmt.Sprintf("ALTER DATABASE %s RENAME TO %s",
		pgx.Identifier{build}.Sanitize(), pgx.Identifier{template}.Sanitize()))
	return err
}

// migrate applies every migration to the database at url.
func migrate(ctx context.Context, url string) error {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return err
	}
	defer pool.Close()
	m, err := migrations.New(pool, nil)
	if err != nil {
		return err
	}
	defer m.Close()
	_, err = m.Up(ctx)
	return err
}

// URLFor returns the connection URL of database db on the test server.
func URLFor(db string) string {
	u := *server
	u.Path = "/" + db
	return u.String()
}

func start(t testing.TB) {
	t.Helper()
	once.Do(func() { initErr = setup() })
	if initErr != nil {
		t.Fatalf("testdb: %v", initErr)
	}
}

// Empty creates a new, unmigrated database for t, drops it when t ends, and
// returns its URL.
func Empty(t testing.TB) string { return create(t, false) }

// URL creates a new migrated database for t, drops it when t ends, and
// returns its URL (for tests that open several pools or start processes).
//
// Its ids start where a database's do after a failover or a restore
// (migration 00040 moves them to the clock in microseconds), past what a
// 32-bit integer holds, so that no statement or program narrows an id
// unseen. SmallIDsURL's start at 1.
func URL(t testing.TB) string {
	t.Helper()
	url := create(t, true)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	defer conn.Close(ctx)
	widen(t, conn)
	return url
}

// widen moves db's ids past 32 bits, as a failover or a restore does.
func widen(t testing.TB, db interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) {
	t.Helper()
	if _, err := database.AdvanceIDs(context.Background(), db); err != nil {
		t.Fatalf("testdb: %v", err)
	}
}

// SmallIDsURL is URL with ids from 1, as on a fresh install: for tests
// whose expectations a reader checks by eye (the agentctl scripts, the
// console's screens, the demo).
func SmallIDsURL(t testing.TB) string {
	t.Helper()
	return create(t, true)
}

func create(t testing.TB, migrated bool) string {
	t.Helper()
	start(t) // sets template
	clause := ""
	if migrated {
		clause = " TEMPLATE " + pgx.Identifier{template}.Sanitize() + " STRATEGY FILE_COPY"
	}
	url, _ := createAs(t, clause)
	if migrated {
		anew(t, url)
	}
	return url
}

// anew gives the database at url an identity of its own: a copy of the
// template is the template's installation (migration 00042), where each
// test's database stands for one of its own, whose effects' downstream
// keys are its own.
func anew(t testing.TB, url string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `UPDATE installation SET id = gen_random_uuid()`); err != nil {
		t.Fatalf("testdb: %v", err)
	}
}

// createAs creates a database for t with the CREATE DATABASE clause
// given, drops it when t ends, and returns its URL and name.
func createAs(t testing.TB, clause string) (string, string) {
	t.Helper()
	start(t)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "t_" + hex.EncodeToString(b)
	ctx := context.Background()
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+clause); err != nil {
		t.Fatalf("testdb: %v", err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec(context.Background(),
			"DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Errorf("testdb: dropping %s: %v", name, err)
		}
	})
	return URLFor(name), name
}

// Collated returns a pool to a new migrated database for t whose text
// sorts by the ICU locale given (as a database made with en_US does,
// where the test cluster's, like the embedded one's, sorts as C), its ids
// past 32 bits as URL's; both are gone when t ends.
func Collated(t testing.TB, icuLocale string) *pgxpool.Pool {
	t.Helper()
	url, name := createAs(t, " TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE '"+
		strings.ReplaceAll(icuLocale, "'", "''")+"'")
	if err := migrate(context.Background(), url); err != nil {
		t.Fatalf("testdb: migrating %s: %v", name, err)
	}
	pool := Open(t, url)
	widen(t, pool)
	return pool
}

// New returns a pool to a new migrated database for t, its ids past 32
// bits (see URL); both are gone when t ends.
func New(t testing.TB) *pgxpool.Pool {
	t.Helper()
	return Open(t, URL(t))
}

// NewSmallIDs is New with ids from 1 (see SmallIDsURL).
func NewSmallIDs(t testing.TB) *pgxpool.Pool {
	t.Helper()
	return Open(t, SmallIDsURL(t))
}

// Open returns a pool to url that is closed when t ends.
func Open(t testing.TB, url string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// Private starts a PostgreSQL cluster of t's own, with settings on top of
// the server's defaults (commits wait for their WAL, as in production),
// migrates a database of its own and returns that database's URL. The
// cluster stops when t ends. It is for a test that changes what the shared
// cluster's other users must not see: a server-wide setting, a restart.
func Private(t testing.TB, settings map[string]string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "agentledger-private-")
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// The server may run as another user (postgres, under root): it must
	// reach its state directory.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatalf("testdb: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := pgembed.Start(ctx, pgembed.Config{StateDir: filepath.Join(dir, "pg"), Settings: settings})
	if err != nil {
		t.Fatalf("testdb: starting a private cluster: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(context.Background()); err != nil {
			t.Errorf("testdb: stopping the private cluster: %v", err)
		}
	})
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE DATABASE private`); err != nil {
		t.Fatalf("testdb: %v", err)
	}
	url := c.URL("private")
	if err := migrate(ctx, url); err != nil {
		t.Fatalf("testdb: migrating the private cluster: %v", err)
	}
	return url
}
