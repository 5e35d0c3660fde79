package migrations_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/migrations"
)

// Version reads what is applied without the migrators' advisory lock: a
// daemon's readiness check answers while another daemon migrates (holding
// the lock), and through a transaction-pooling PgBouncer no session lock
// is taken on one server connection and released on another. On an empty
// database it is 0, and it creates nothing.
func TestVersionTakesNoLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.Open(t, testdb.Empty(t))
	m := newMigrator(t, pool)
	if v, err := m.Version(ctx); err != nil || v != 0 {
		t.Fatalf("empty database: version %d, %v; want 0", v, err)
	}
	var created bool
	if err := pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, migrations.TableName).Scan(&created); err != nil || created {
		t.Fatalf("Version created the versions table (%v)", err)
	}
	if ts := tables(t, pool); len(ts) != 0 {
		t.Fatalf("Version created %v", ts)
	}
	if _, err := m.Up(ctx); err != nil {
		t.Fatal(err)
	}
	holder, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Release()
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_lock($1)`, int64(0x6167656e746c6564)); err != nil {
		t.Fatal(err)
	}
	defer holder.Exec(ctx, `SELECT pg_advisory_unlock($1)`, int64(0x6167656e746c6564)) //nolint:errcheck
	// A hang is the failure; the bound only ends the test that shows it.
	vctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if v, err := m.Version(vctx); err != nil || v != m.Latest() {
		t.Fatalf("version while another migrator holds the lock: %d, %v; want %d", v, err, m.Latest())
	}
}
