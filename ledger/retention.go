package ledger

import (
	"context"
	"fmt"
	"time"
)

// DefaultRetention keeps ledger rows for 7 days after their task finished:
// longer than GitHub's and Stripe's redelivery windows and a working week of
// operator replay. A row of an unfinished task never expires (I7).
const DefaultRetention = 7 * 24 * time.Hour

// TaskRetention is the part the owner of the tasks table plays in expiry
// (claims.LedgerRetention): fragments the expiry statements compose, so that
// marking a task and deleting its rows commit together.
type TaskRetention interface {
	// FinishedFrom selects the task row id while the task has finished
	// longer than window ago ("table alias WHERE …", the alias t).
	FinishedFrom(id, window string) string
	// MarkExpiredCTE is a CTE named name marking the tasks ids selects as
	// having lost ledger rows: they can no longer be replayed.
	MarkExpiredCTE(name, ids string) string
	// ExistsFrom selects the task row id if the task still exists.
	ExistsFrom(id string) string
}

// Retention is how long ledger rows outlive their finished task.
type Retention struct {
	Default      time.Duration            // zero: DefaultRetention
	PerOperation map[string]time.Duration // overrides by operation
}

// Expire deletes expired rows in batches of at most batch rows (each batch
// its own short statement, so no long locks) and returns how many went. A
// task that lost ledger rows this way can no longer be replayed
// (operator.Service.Replay refuses with ErrConflict): its completed effects
// would run again. Re-running it as a new intent is the way back, and
// performs every effect again, as a new intent should.
func (l *Ledger) Expire(ctx context.Context, tasks TaskRetention, r Retention, batch int) (int64, error) {
	if batch <= 0 {
		batch = 1000
	}
	if r.Default == 0 {
		r.Default = DefaultRetention
	}
	ops := make([]string, 0, len(r.PerOperation))
	for op := range r.PerOperation {
		ops = append(ops, op)
	}
	var total int64
	sweep := func(op *string, window time.Duration) error {
		if window <= 0 {
			return fmt.Errorf("ledger: retention window %v must be positive", window)
		}
		for {
			tag, err := l.db.Exec(ctx, expireSQL(tasks), op, window, batch, ops)
			if err != nil {
				return fmt.Errorf("ledger: expire: %w", err)
			}
			total += tag.RowsAffected()
			if tag.RowsAffected() < int64(batch) {
				return nil
			}
		}
	}
	for op, w := range r.PerOperation {
		if err := sweep(&op, w); err != nil {
			return total, err
		}
	}
	if err := sweep(nil, r.Default); err != nil {
		return total, err
	}
	longest := r.Default
	for _, w := range r.PerOperation {
		longest = max(longest, w)
	}
	for {
		tag, err := l.db.Exec(ctx, expireOrphansSQL(tasks), longest, batch)
		if err != nil {
			return total, fmt.Errorf("ledger: expire: %w", err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < int64(batch) {
			return total, nil
		}
	}
}
