package database

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrPoolerPassesPrepared is Open's error, with Pooler and PoolerPrepares,
// for a server that sees a prepared statement under the name its client
// gave it: PostgreSQL itself, or a pooler that does not keep prepared
// statements (PgBouncer before 1.21, or max_prepared_statements = 0).
// Through such a pooler a statement prepared in one transaction is
// missing from the server connection the next one gets.
var ErrPoolerPassesPrepared = errors.New("the server sees prepared statements under the names the client gives them: " +
	"this is PostgreSQL itself or a pooler that does not keep prepared statements " +
	"(PgBouncer before 1.21, or max_prepared_statements = 0)")

// poolerProbe names the statement checkKeepsPrepared prepares.
const poolerProbe = "agentledger_pooler_probe"

// checkKeepsPrepared tells a pooler that keeps prepared statements from
// one that passes them through. PgBouncer 1.21 and later keep each under
// a name of their own (PGBOUNCER_n) and prepare it again on whichever
// server connection a later transaction gets; one that passes them
// through leaves the client's name on one server connection. Prepared and
// looked up in one transaction, which holds its server connection, the
// client's name shows in pg_prepared_statements only when passed through.
func checkKeepsPrepared(ctx context.Context, pool *pgxpool.Pool) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Conn().Prepare(ctx, poolerProbe, "SELECT 1"); err != nil {
		return fmt.Errorf("preparing a statement through the pooler: %w", err)
	}
	var passed bool
	err = tx.QueryRow(ctx, "SELECT EXISTS (SELECT FROM pg_prepared_statements WHERE name = $1)", poolerProbe).Scan(&passed)
	// Not transactional: gone only when deallocated.
	if derr := tx.Conn().Deallocate(ctx, poolerProbe); err == nil {
		err = derr
	}
	if err != nil {
		return fmt.Errorf("checking that the pooler keeps prepared statements: %w", err)
	}
	if passed {
		return ErrPoolerPassesPrepared
	}
	return tx.Commit(ctx)
}
