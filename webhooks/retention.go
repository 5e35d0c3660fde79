package webhooks

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// DefaultRetention keeps inbox rows a week: longer than GitHub's three-day
// redelivery window.
const DefaultRetention = 7 * 24 * time.Hour

// Execer is what ExpireInbox needs: *pgxpool.Pool has it.
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// ExpireInbox deletes at most batch deliveries received longer than window
// ago and returns how many went (a janitor.Sweep).
func ExpireInbox(db Execer) func(ctx context.Context, window time.Duration, batch int) (int64, error) {
	return func(ctx context.Context, window time.Duration, batch int) (int64, error) {
		if window <= 0 || batch <= 0 {
			return 0, fmt.Errorf("webhooks: expire inbox: window %v and batch %d must be positive", window, batch)
		}
		tag, err := db.Exec(ctx, expireInboxSQL, window, batch)
		if err != nil {
			return 0, fmt.Errorf("webhooks: expire inbox: %w", err)
		}
		return tag.RowsAffected(), nil
	}
}
