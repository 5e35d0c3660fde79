package database

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger/internal/pgplan"
)

// ErrPoolerPassesPrepared is Open's error, with PoolerPrepares,
// for a server that sees a prepared statement under the name its client
// gave it: PostgreSQL itself, or a pooler that does not keep prepared
// statements (PgBouncer before 1.21, or max_prepared_statements = 0).
// Through such a pooler a statement prepared in one transaction is
// missing from the server connection the next one gets.
var ErrPoolerPassesPrepared = errors.New("the server sees prepared statements under the names the client gives them: " +
	"this is PostgreSQL itself or a pooler that does not keep prepared statements " +
	"(PgBouncer before 1.21, or max_prepared_statements = 0); set max_prepared_statements in PgBouncer 1.21 or later, " +
	"or prepare nothing (agentd --pgbouncer)")

// checkKeepsPrepared tells a pooler that keeps prepared statements from
// one that passes them through. PgBouncer 1.21 and later keep each under
// a name of their own (PGBOUNCER_n) and prepare it again on whichever
// server connection a later transaction gets; one that passes them
// through leaves the client's name on one server connection. Prepared and
// looked up in one transaction, which holds its server connection, the
// client's name shows in pg_prepared_statements only when passed through.
//
// The probe's name is new each time and the look-up is prepared nowhere:
// through a pooler that passes statements through, a refused start's
// statements stay on the server connection, which the next start may
// get. A probe name the server already has is itself such a leftover.
//
// It also reads the planner settings agentd's sessions take
// (pgplan.Settings), which a pooler's server connections get only from
// its connect_query, and warns of each that differs: with plans kept,
// one made with sequential scans on lasts.
func checkKeepsPrepared(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) error {
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
	probe := "agentledger_pooler_probe_" + rand.Text()
	if _, err := tx.Conn().Prepare(ctx, probe, "SELECT 1"); err != nil {
		if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) && pgErr.Code == "42P05" { // duplicate_prepared_statement
			return ErrPoolerPassesPrepared
		}
		return fmt.Errorf("preparing a statement through the pooler: %w", err)
	}
	var passed bool
	var seqscan, jit string
	err = tx.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_prepared_statements WHERE name = $1),
	current_setting('enable_seqscan'), current_setting('jit')`,
		pgx.QueryExecModeSimpleProtocol, probe).Scan(&passed, &seqscan, &jit)
	// Not transactional: gone only when deallocated.
	if derr := tx.Conn().Deallocate(ctx, probe); err == nil {
		err = derr
	}
	if err != nil {
		return fmt.Errorf("checking that the pooler keeps prepared statements: %w", err)
	}
	if passed {
		return ErrPoolerPassesPrepared
	}
	for name, got := range map[string]string{"enable_seqscan": seqscan, "jit": jit} {
		if want := pgplan.Settings[name]; got != want {
			log.Warn("the pooler's server connections plan with a setting agentd's own sessions change, and prepared statements keep "+
				"their plans: set it in the pooler's connect_query (docs/deployment.md, Behind PgBouncer)",
				"setting", name, "is", got, "want", want)
		}
	}
	return tx.Commit(ctx)
}
