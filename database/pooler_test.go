package database_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/agentledger/agentledger/database"
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

	bin := pgbouncer.Find(t, "TEST_PGBOUNCER", "the check through PgBouncer")
	keeps, version := pgbouncer.KeepsPrepared(t, bin)
	cfg := pgbouncer.Config{URL: url, PoolSize: 2}
	if keeps {
		cfg.Settings = map[string]string{"max_prepared_statements": "0"}
	}
	if db, err := open(pgbouncer.Start(t, bin, cfg)); !errors.Is(err, database.ErrPoolerPassesPrepared) {
		if err == nil {
			db.Close(ctx)
		}
		t.Fatalf("PgBouncer %s passing prepared statements through: %v, want ErrPoolerPassesPrepared", version, err)
	}
	if !keeps {
		pgbouncer.SkipVisibly(t, "PgBouncer "+version+" does not keep prepared statements (1.21 or later does), "+
			"so the pool through one that does was not tried; TEST_PGBOUNCER names another")
	}

	cfg.Settings = map[string]string{"max_prepared_statements": "200"}
	db, err := open(pgbouncer.Start(t, bin, cfg))
	if err != nil {
		t.Fatalf("PgBouncer %s keeping prepared statements: %v", version, err)
	}
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
