package dbaway

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
)

// Conflict reports whether err is PostgreSQL refusing one transaction of
// several that raced (a serialization failure, or a deadlock it broke):
// the transaction changed nothing, and the same transaction may pass when
// run again.
func Conflict(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40001" || pgErr.Code == "40P01")
}

// conflictTries bounds OnConflict: a conflict that recurs this often is
// no race, and is answered.
const conflictTries = 5

// OnConflict runs tx, a whole transaction, again while it fails with a
// Conflict, a few times, spaced by Backoff: whoever races it has committed
// or given up by then, and the conditions tx writes under read what that
// left.
func OnConflict(ctx context.Context, tx func() error) error {
	for attempt := int32(1); ; attempt++ {
		err := tx()
		if err == nil || !Conflict(err) || attempt >= conflictTries || !Backoff.Wait(ctx, attempt) {
			return err
		}
	}
}
