package httpapi

import (
	"context"
	"fmt"
	"time"
)

// ExpireKeys returns a retention sweep (a janitor.Sweep's Delete) of the
// Idempotency-Key records: each call deletes at most batch records created
// longer than window ago, never one whose request is running, and returns
// how many went. The window is the promise made to clients: a retry within
// it is answered from its record (or, for a request that crashed, takes
// the record over and finds the task it made); a key presented after it is
// a new request and makes a new task.
func ExpireKeys(db DB) func(ctx context.Context, window time.Duration, batch int) (int64, error) {
	return func(ctx context.Context, window time.Duration, batch int) (int64, error) {
		if window <= 0 || batch <= 0 {
			return 0, fmt.Errorf("httpapi: expire keys: window %v and batch %d must be positive", window, batch)
		}
		tag, err := db.Exec(ctx, expireKeysSQL, window, batch)
		if err != nil {
			return 0, fmt.Errorf("httpapi: expire keys: %w", err)
		}
		return tag.RowsAffected(), nil
	}
}
