package database_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	neturl "net/url"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agentledger/agentledger/database"
	"github.com/agentledger/agentledger/internal/pgplan"
	"github.com/agentledger/agentledger/internal/test/logbuf"
	"github.com/agentledger/agentledger/internal/test/pgbouncer"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

// A pool that prepares through a pooler (agentd --pgbouncer-prepared) is
// refused where prepared statements are passed through as they are —
// PostgreSQL itself, PgBouncer before 1.21, max_prepared_statements = 0 —
// and taken through a PgBouncer that keeps them, where statements
// prepared once run in transaction after transaction on whichever server
// connection each gets.
func TestPoolerPreparesIsChecked(t *testing.T) {
	ctx := context.Background()
	url := testdb.URL(t)
	open := func(u string) (*database.DB, error) {
		return database.Open(ctx, database.Config{URL: u, Pooler: true, PoolerPrepares: true, MaxConns: 4})
	}
	if db, err := open(url); !errors.Is(err, database.ErrPoolerPassesPrepared) {
		if err == nil {
			db.Close(ctx)
		}
		t.Fatalf("PostgreSQL itself: %v, want ErrPoolerPassesPrepared", err)
	}

	// Through the installed PgBouncer, passing them through (1.18, or a
	// later one with max_prepared_statements = 0). A second start on the
	// server connection the first left is refused as the first was: the
	// first's statements are still there.
	bin := pgbouncer.Find(t, "TEST_PGBOUNCER", "the check through PgBouncer")
	keeps, version := pgbouncer.KeepsPrepared(t, bin)
	cfg := pgbouncer.Config{URL: url, PoolSize: 1}
	if keeps {
		cfg.Settings = map[string]string{"max_prepared_statements": "0"}
	}
	passing := pgbouncer.Start(t, bin, cfg)
	for _, start := range []string{"first", "second"} {
		if db, err := open(passing); !errors.Is(err, database.ErrPoolerPassesPrepared) {
			if err == nil {
				db.Close(ctx)
			}
			t.Fatalf("PgBouncer %s passing prepared statements through, %s start: %v, want ErrPoolerPassesPrepared", version, start, err)
		}
	}

	// Through one that keeps them. Without agentd's planner settings in
	// its connect_query, the start warns of each.
	keeping := pgbouncer.FindKeeping(t, "the pool through a PgBouncer keeping prepared statements")
	_, version = pgbouncer.KeepsPrepared(t, keeping)
	for _, connectQuery := range []string{"", pgplan.ConnectQuery()} {
		var logged logbuf.Buffer
		cfg = pgbouncer.Config{URL: url, PoolSize: 2, ConnectQuery: connectQuery,
			Settings: map[string]string{"max_prepared_statements": "200"}}
		db, err := database.Open(ctx, database.Config{URL: pgbouncer.Start(t, keeping, cfg), Pooler: true, PoolerPrepares: true,
			MaxConns: 4, Logger: slog.New(slog.NewTextHandler(&logged, nil))})
		if err != nil {
			t.Fatalf("PgBouncer %s keeping prepared statements, connect_query %q: %v", version, connectQuery, err)
		}
		warned := strings.Count(logged.String(), "plan with a setting agentd's own sessions change")
		if want := map[bool]int{true: 2, false: 0}[connectQuery == ""]; warned != want {
			t.Errorf("connect_query %q: %d warnings of planner settings, want %d:\n%s", connectQuery, warned, want, logged.String())
		}
		if connectQuery == "" {
			db.Close(ctx)
			continue
		}
		queries(t, ctx, db)
	}
}

// queries runs statements on db from four client connections over two
// server connections, each its own transaction, and checks that PgBouncer
// prepared them on the server.
func queries(t *testing.T, ctx context.Context, db *database.DB) {
	t.Helper()
	defer db.Close(ctx)
	// Four client connections on two server connections, each statement
	// its own transaction: each client's cached statement meets server
	// connections it was not prepared on.
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for i := range 200 {
		wg.Go(func() {
			var n int
			if err := db.Pool.QueryRow(ctx, "SELECT $1::int + 1", i).Scan(&n); err != nil {
				errs <- err
			} else if n != i+1 {
				errs <- fmt.Errorf("%d + 1 = %d", i, n)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// The server connection has them under PgBouncer's names.
	var kept int
	if err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM pg_prepared_statements WHERE name LIKE 'PGBOUNCER%'").Scan(&kept); err != nil {
		t.Fatal(err)
	}
	if kept == 0 {
		t.Error("no statement prepared by PgBouncer on the server connection")
	}
}

// Through a PgBouncer that keeps prepared statements, a change of what a
// statement returns fails it until PgBouncer's server connections are made
// anew: PgBouncer prepares the statement once per server connection for
// every client, and keeps it when a client drops its own. RECONNECT on
// its admin console ends that, as docs/deployment.md has an upgrade do.
func TestAChangedStatementNeedsAReconnectThroughPgBouncer(t *testing.T) {
	ctx := context.Background()
	url := testdb.URL(t)
	bin := pgbouncer.FindKeeping(t, "the migration through a PgBouncer keeping prepared statements")
	direct := testdb.Open(t, url)
	if _, err := direct.Exec(ctx, `CREATE TABLE changing (a int); INSERT INTO changing VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	through := pgbouncer.Start(t, bin, pgbouncer.Config{URL: url, PoolSize: 1,
		Settings: map[string]string{"max_prepared_statements": "200", "admin_users": u.User.Username()}})
	db, err := database.Open(ctx, database.Config{URL: through, Pooler: true, PoolerPrepares: true, MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)
	read := func() error {
		rows, err := db.Pool.Query(ctx, `SELECT * FROM changing`)
		if err != nil {
			return err
		}
		rows.Close()
		return rows.Err()
	}
	if err := read(); err != nil {
		t.Fatal(err)
	}
	if _, err := direct.Exec(ctx, `ALTER TABLE changing ADD COLUMN b int`); err != nil {
		t.Fatal(err)
	}
	for try := 1; try <= 2; try++ {
		if err := read(); err == nil || !strings.Contains(err.Error(), "cached plan must not change result type") {
			t.Fatalf("try %d after the change, before a RECONNECT: %v, want the cached plan's error", try, err)
		}
	}

	console, err := neturl.Parse(through)
	if err != nil {
		t.Fatal(err)
	}
	console.Path = "/pgbouncer" // the admin console
	admin, err := pgx.Connect(ctx, console.String())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "RECONNECT", pgx.QueryExecModeSimpleProtocol); err != nil {
		t.Fatal(err)
	}
	if err := read(); err != nil {
		t.Fatalf("after a RECONNECT: %v", err)
	}
}
