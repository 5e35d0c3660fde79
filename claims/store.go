package claims

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
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
	Now func() time.Time
}

// New returns a Store over db.
func New(db DB) *Store { return &Store{db: db} }

// now returns the pinned clock or nil, which the SQL turns into now().
func (s *Store) now() *time.Time {
	if s.Now == nil {
		return nil
	}
	t := s.Now()
	return &t
}
