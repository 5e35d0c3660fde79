package claims

import (
	"context"
	"fmt"
	"time"
)

// DeleteFinished deletes at most batch tasks that finished (succeeded, dead
// or cancelled) longer than window ago, oldest first, with their attempt
// records, and returns how many went. Unfinished tasks are never touched,
// nor are tasks with a notification still to deliver or failed (its
// delivery reads the ledger, whose rows of the task stay with it).
// The ledger keeps its own retention (ledger.Expire), which already ended a
// finished task's replay; its rows of deleted tasks expire as orphans.
func (s *Store) DeleteFinished(ctx context.Context, window time.Duration, batch int) (int64, error) {
	if window <= 0 || batch <= 0 {
		return 0, fmt.Errorf("claims: delete finished: window %v and batch %d must be positive", window, batch)
	}
	tag, err := s.db.Exec(ctx, deleteFinishedSQL, window, batch)
	if err != nil {
		return 0, fmt.Errorf("claims: delete finished: %w", err)
	}
	return tag.RowsAffected(), nil
}
