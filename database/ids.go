package database

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentledger/agentledger/dbaway"
)

// Ids leave the database (a task's id enters the keys of its effects,
// which downstream services keep), so no id may be issued twice. A
// failover that loses commits, or a restore from a backup, would set the
// sequences back; migration 00040's agentledger_guard_ids moves them on
// when the database is another than the one recorded (another timeline,
// server, or a logical restore).

// GuardIDs returns a pgx AfterConnect hook that makes the server check as
// a connection's first statement: after a failover every connection is
// new, so the first to reach the promoted server advances the ids before
// any of them inserts. Open sets it on the pools it makes; a program that
// inserts tasks through a pool of its own (client.Database) sets it there
// (pgxpool.Config.AfterConnect). A database not migrated to 00040 yet
// (the function is missing: agentctl migrate up, or a daemon about to
// migrate) is let through, and so is any check the server refuses (a role
// that may not advance the sequences), with a warning; a check cut short
// by the server going away fails the connection, as the outage fails any.
// log may be nil.
func GuardIDs(log *slog.Logger) func(context.Context, *pgx.Conn) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return func(ctx context.Context, conn *pgx.Conn) error {
		var next *int64
		// The check's name since migration 00042, where the old name
		// refuses the releases before it once the keys are scoped. Run
		// once a connection, it is prepared nowhere: through a pooler
		// that passes prepared statements through, the server
		// connection may already hold another client's.
		once := pgx.QueryExecModeSimpleProtocol
		err := conn.QueryRow(ctx, `SELECT agentledger_check_ids()`, once).Scan(&next)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "42883" { // a schema before 00042
			err = conn.QueryRow(ctx, `SELECT agentledger_guard_ids()`, once).Scan(&next)
		}
		switch {
		case errors.As(err, &pgErr) && pgErr.Code == "42883": // undefined function
			return nil
		case dbaway.Unavailable(err):
			// The server going away under the new connection (a shutdown,
			// a failover): the connection fails as any does then, and the
			// outage says so once (not a warning per connection).
			return fmt.Errorf("checking the database's identity: %w", err)
		case errors.As(err, &pgErr):
			// A check the server refuses (a role that may not advance
			// the sequences, a timeout) must not keep the daemon from
			// its database: the connection is let through, said.
			log.Warn("could not check the database's identity on a new connection: ids are not advanced after a failover or restore until a check succeeds",
				"err", pgErr.Message, "code", pgErr.Code)
			return nil
		case err != nil:
			return fmt.Errorf("checking the database's identity: %w", err)
		case next != nil:
			log.Warn("the database is another than recorded (a failover or a restore): ids advanced past any the lost commits could have used",
				"next_task_id", *next)
		}
		return nil
	}
}

// AdvanceIDs moves every id sequence on, as a change of database does
// (to the server's clock in microseconds, or past its last value), and
// returns the next task id: for a restore the check cannot tell (a copy of
// a stopped cluster's directory), after which ids issued since the copy
// was taken would be issued again.
func AdvanceIDs(ctx context.Context, db interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) (int64, error) {
	var next int64
	if err := db.QueryRow(ctx, `SELECT agentledger_advance_ids()`).Scan(&next); err != nil {
		return 0, fmt.Errorf("advancing the ids: %w", err)
	}
	return next, nil
}
