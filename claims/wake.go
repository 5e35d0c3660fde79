package claims

import (
	"context"
	"fmt"
	"time"
)

// WakeDue queues the waiting tasks of queue whose deadline (run_at) came —
// a request for approval that timed out, a timer, a wait's timeout — and
// notifies the queue's workers; it returns how many. Each worker pool runs
// it on its poll, before its full claim, and at the next deadline it knows
// of (WakeDueNext), so that a timer fires on time (one read of an index
// holding only the waiting tasks: free when none is due).
func (s *Store) WakeDue(ctx context.Context, queue string) (int64, error) {
	n, _, err := s.WakeDueNext(ctx, queue)
	return n, err
}

// wakeDueLimit is how many tasks one WakeDue queues at most.
const wakeDueLimit = 1000

// WakeDueNext is WakeDue that also returns the earliest deadline among the
// queue's tasks still waiting (zero if none; now if more are due than one
// statement wakes), for the caller to come back then.
func (s *Store) WakeDueNext(ctx context.Context, queue string) (int64, time.Time, error) {
	var n int64
	var next *time.Time
	if err := s.db.QueryRow(ctx, wakeDueSQL, queue, s.Now.Param()).Scan(&n, &next); err != nil {
		return 0, time.Time{}, fmt.Errorf("wake due waits: %w", err)
	}
	switch {
	case n >= wakeDueLimit:
		return n, time.Now(), nil
	case next == nil:
		return n, time.Time{}, nil
	}
	return n, *next, nil
}

// WakeTasks is two CTEs that wake the tasks named by the task_id column of
// a CTE d written before them (the waits a decision or a signal ended):
// woken, the tasks made due now — a waiting task queued, a queued or
// retrying one due later brought forward, what they waited for cleared
// (what holds them now is the claims' to say: registry.ExplainWaits) —
// and notified, their queues'
// workers told. A running task is marked instead: its run_at set past its
// attempt's start (greatest: the statement's clock may lag the claim's),
// which its park (Defer with Park) reads as "woken meanwhile" and queues
// it instead of parking it, so a wake that lands between an attempt's
// look at its wait and its park is never lost. A statement using it must
// read notified (SELECT … WHERE (SELECT count(*) FROM notified) >= 0).
const WakeTasks = `woken AS (
	UPDATE tasks t SET
		state = CASE WHEN t.state = 'waiting' THEN 'queued' ELSE t.state END,
		run_at = CASE WHEN t.state = 'running' THEN greatest(now(), t.attempted_at + interval '1 microsecond') ELSE now() END,
		wait_reason = CASE WHEN t.state = 'running' THEN t.wait_reason END,
		updated_at = now()
	FROM d WHERE t.id = d.task_id
		AND (t.state IN ('waiting', 'running') OR (t.state IN ('queued', 'retrying') AND t.run_at > now()))
	RETURNING t.queue, t.state
),
notified AS (
	SELECT pg_notify('agentledger_task_insert', q) FROM (SELECT DISTINCT queue AS q FROM woken WHERE state = 'queued') w
)`

// wakeDueSQL queues up to 1,000 due waiting tasks of queue $1, skipping
// rows another statement holds (a decision waking one at the same time),
// and reads the next deadline of those left waiting.
const wakeDueSQL = `/* claims.wake_due */
WITH due AS (
	SELECT id FROM tasks
	WHERE state = 'waiting' AND run_at <= coalesce($2::timestamptz, now()) AND queue = $1
	ORDER BY run_at LIMIT 1000
	FOR UPDATE SKIP LOCKED
),
up AS (
	UPDATE tasks t SET state = 'queued', wait_reason = NULL, updated_at = coalesce($2::timestamptz, now())
	FROM due WHERE t.id = due.id
	RETURNING t.queue
),
wake AS (
	SELECT pg_notify('agentledger_task_insert', q) FROM (SELECT DISTINCT queue AS q FROM up) s
)
SELECT (SELECT count(*) FROM up WHERE ` + woken + `),
	(SELECT run_at FROM tasks WHERE state = 'waiting' AND run_at > coalesce($2::timestamptz, now()) AND queue = $1
		ORDER BY run_at LIMIT 1)`

// releaseDeferredSQL makes due now the queued, retrying or compensating
// tasks deferred to a later time with a wait reason starting with $1 (a
// prefix compare: no LIKE pattern in a target), clears the reason, and
// notifies their queues' workers; it returns how many.
const releaseDeferredSQL = `/* claims.releaseDeferred */
WITH released AS (
	UPDATE tasks SET run_at = now(), wait_reason = NULL, updated_at = now()
	WHERE state IN ('queued', 'retrying', 'compensating') AND run_at > now()
		AND left(wait_reason, length($1)) = $1
	RETURNING queue
),
notified AS (
	SELECT pg_notify('agentledger_task_insert', q) FROM (SELECT DISTINCT queue AS q FROM released) s
)
SELECT count(*) FROM released WHERE (SELECT count(*) FROM notified) >= 0`

// ReleaseDeferred makes due now the tasks deferred with a reason that
// starts with prefix — those a circuit breaker held back, when an
// operator closes it (flow.BreakerReason) — instead of at the time their
// deferral named. It reads every runnable task of the queue table (an
// operator's action, not a hot path).
func (s *Store) ReleaseDeferred(ctx context.Context, prefix string) (int64, error) {
	if prefix == "" {
		return 0, fmt.Errorf("release deferred tasks: an empty reason prefix would release every deferral")
	}
	var n int64
	if err := s.db.QueryRow(ctx, releaseDeferredSQL, prefix).Scan(&n); err != nil {
		return 0, fmt.Errorf("release deferred tasks: %w", err)
	}
	return n, nil
}
