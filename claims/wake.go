package claims

import (
	"context"
	"fmt"
)

// WakeDue queues the waiting tasks of queue whose deadline (run_at) came —
// a request for approval that timed out — and notifies the queue's workers;
// it returns how many. Each worker pool runs it on its poll, before its full
// claim, so that a deadline is met within a poll interval (one read of an
// index holding only the waiting tasks: free when none is due).
func (s *Store) WakeDue(ctx context.Context, queue string) (int64, error) {
	var n int64
	if err := s.db.QueryRow(ctx, wakeDueSQL, queue, s.Now.Param()).Scan(&n); err != nil {
		return 0, fmt.Errorf("wake due waits: %w", err)
	}
	return n, nil
}

// wakeDueSQL queues up to 1,000 due waiting tasks of queue $1, skipping
// rows another statement holds (a decision waking one at the same time).
const wakeDueSQL = `/* claims.wake_due */
WITH due AS (
	SELECT id FROM tasks
	WHERE state = 'waiting' AND run_at <= coalesce($2::timestamptz, now()) AND queue = $1
	ORDER BY run_at LIMIT 1000
	FOR UPDATE SKIP LOCKED
),
up AS (
	UPDATE tasks t SET state = 'queued', updated_at = coalesce($2::timestamptz, now())
	FROM due WHERE t.id = due.id
	RETURNING t.queue
),
wake AS (
	SELECT pg_notify('agentledger_task_insert', q) FROM (SELECT DISTINCT queue AS q FROM up) s
)
SELECT count(*) FROM up WHERE ` + woken
