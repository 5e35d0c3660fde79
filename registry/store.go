// Package registry is what the worker pools tell the database about
// themselves: their announcements (queues, kinds, tools with their
// schemas and effect classes, MCP servers' states), refreshed while they
// run and pruned when they stop, and the payload schemas of typed kinds.
// The submit check (package admit) asks it what is served; the claim
// protocol (package claims) does not read it. Workers also reads the
// leases of tasks, read-only, to list the pools known only by them.
package registry

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentledger/agentledger"
)

// DB is what the store needs from a connection: *pgxpool.Pool, *pgx.Conn
// and pgx.Tx all have it.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Store reads and writes the registry in one database.
type Store struct {
	db DB

	// Now pins the database clock for tests; nil means the database's now().
	Now agentledger.Clock
}

// New returns a Store over db.
func New(db DB) *Store { return &Store{db: db} }
