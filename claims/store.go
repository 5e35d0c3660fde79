package claims

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentledger/agentledger"
)

// DB is what the store needs from a connection: *pgxpool.Pool, *pgx.Conn
// and pgx.Tx all have it (Begin on a pgx.Tx opens a savepoint).
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Store runs the claim protocol against one database.
type Store struct {
	db DB

	// Now pins the database clock for tests; nil means the database's now().
	Now agentledger.Clock
}

// New returns a Store over db.
func New(db DB) *Store { return &Store{db: db} }
