package claims

import (
	"context"
	"fmt"
	"time"
)

// settleWait bounds how long SettleCaps waits for the transactions older
// than it: a claim takes milliseconds, and a transaction left open longer
// is no claim of a live daemon.
const settleWait = 2 * time.Second

// SettleCaps makes the caps newly set on tenants count every task they
// run. A claim marks what it leases capped or not as its snapshot sees the
// share rows (cappedNow), and a new cap's trigger marks the tasks already
// running, but a claim whose snapshot was taken before the cap committed
// and which commits after the trigger ran leases the tenant's tasks
// marked uncapped: those would not count until they finish (a cap set
// under load let one task in about eight through so). SettleCaps waits
// until every transaction that began before it has ended (at most
// settleWait) and marks the tenants' running tasks marked uncapped as
// unknown, so they count. Call it after the cap has committed.
func (s *Store) SettleCaps(ctx context.Context, tenants []string) error {
	if len(tenants) == 0 {
		return nil
	}
	var since time.Time
	if err := s.db.QueryRow(ctx, `/* claims.settleCapsClock */ SELECT clock_timestamp()`).Scan(&since); err != nil {
		return fmt.Errorf("settling the caps of %v: %w", tenants, err)
	}
	deadline := time.Now().Add(settleWait)
	for {
		var older int
		if err := s.db.QueryRow(ctx, olderTransactionsSQL, since).Scan(&older); err != nil {
			return fmt.Errorf("settling the caps of %v: %w", tenants, err)
		}
		if older == 0 || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("settling the caps of %v: %w", tenants, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	if _, err := s.db.Exec(ctx, settleCapsSQL, tenants); err != nil {
		return fmt.Errorf("settling the caps of %v: %w", tenants, err)
	}
	return nil
}

// olderTransactionsSQL counts the other sessions' transactions of this
// database that began before $1.
const olderTransactionsSQL = `/* claims.settleCapsWait */
SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'
	AND xact_start < $1`

// settleCapsSQL marks the running tasks of the tenants $1 that a claim
// marked uncapped as unknown: they count towards the caps
// (tasks_leased_idx).
const settleCapsSQL = `/* claims.settleCaps */
UPDATE tasks SET capped = NULL WHERE state = 'running' AND capped = false AND tenant = ANY ($1::text[])`
