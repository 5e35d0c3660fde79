package database

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Ids leave the database (a task's id enters the keys of its effects,
// which downstream services keep), so no id may be issued twice. A
// failover that loses commits, or a restore from a backup, would set the
// sequences back; migration 00040's agentledger_guard_ids moves them on to
// the next billion when the server the rows live on is another than the
// one recorded (a new timeline or system identifier).

// guardIDs is every connection's first statement: after a failover every
// connection is new, so the first to reach the promoted server advances
// the ids before any of them inserts. A database not migrated to 00040 yet
// (the function is missing: agentctl migrate up, or a daemon about to
// migrate) and a role that may not advance the sequences are let through,
// the latter with a warning.
func guardIDs(log *slog.Logger) func(context.Context, *pgx.Conn) error {
	return func(ctx context.Context, conn *pgx.Conn) error {
		var next *int64
		err := conn.QueryRow(ctx, `SELECT agentledger_guard_ids()`).Scan(&next)
		var pgErr *pgconn.PgError
		switch {
		case errors.As(err, &pgErr) && pgErr.Code == "42883": // undefined function
			return nil
		case errors.As(err, &pgErr) && pgErr.Code == "42501": // insufficient privilege
			log.Warn("this role may not check the database's identity: ids are not advanced after a failover or restore", "err", pgErr.Message)
			return nil
		case err != nil:
			return fmt.Errorf("checking the database's identity: %w", err)
		case next != nil:
			log.Warn("the database is on another server or timeline than recorded (a failover or a restore): ids advanced past any the lost commits could have used",
				"next_task_id", *next)
		}
		return nil
	}
}

// AdvanceIDs moves every id sequence on to the next billion, as a change
// of server does, and returns the next task id: for a restore that keeps
// the server's identity (a copy of a stopped cluster's directory), after
// which ids issued since the copy was taken would be issued again.
func AdvanceIDs(ctx context.Context, db interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) (int64, error) {
	var next int64
	if err := db.QueryRow(ctx, `SELECT agentledger_advance_ids()`).Scan(&next); err != nil {
		return 0, fmt.Errorf("advancing the ids: %w", err)
	}
	return next, nil
}
