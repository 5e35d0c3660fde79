package main

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Kinds of waiting task throughput --waiting inserts beside its burn-down.
const (
	waitingApproval = "approval" // waiting for a person's approval
	waitingSignal   = "signal"   // wait_for_signal
	waitingTimer    = "timer"    // wait_timer
	waitingMixed    = "mixed"    // half signal, half timer, alternating
)

// checkWaitingKind checks the --waiting-kind flag.
func checkWaitingKind(kind string) error {
	switch kind {
	case waitingApproval, waitingSignal, waitingTimer, waitingMixed:
		return nil
	}
	return fmt.Errorf("--waiting-kind %q: give approval, signal, timer or mixed", kind)
}

// idleSignal is the signal the waiting fixture's signal waits wait for,
// keys idle-1, idle-2, …: none is ever sent.
const idleSignal = "bench.idle"

// insertWaitingKind inserts n waiting tasks of kind beside the run's and
// returns the highest id; approvals are insertWaiting's, the others
// insertWaits'.
func insertWaitingKind(ctx context.Context, db *pgxpool.Pool, n int, kind string) (int64, error) {
	if kind == waitingApproval {
		return insertWaiting(ctx, db, n)
	}
	return insertWaits(ctx, db, n, kind, idleSignal)
}

// waitsFixtureSQL inserts $1 steps tasks parked at their first step as the
// wait tools leave them: waiting, due at their wait's deadline in a day
// (run_at), their wait reason as waits.Describe words it, their one
// attempt recorded as deferred and refunded (attempt 0, lease token 1), and
// their wait in table waits; it returns the highest task id — for signal $3 key idle-i, or a timer, as $2
// says (mixed: alternating). Task and wait ids are drawn first so that each
// row can name the other.
const waitsFixtureSQL = `
WITH g AS (
	SELECT nextval(pg_get_serial_sequence('tasks', 'id')) AS task_id, nextval(pg_get_serial_sequence('waits', 'id')) AS wait_id,
		CASE $2 WHEN 'signal' THEN true WHEN 'timer' THEN false ELSE i % 2 = 1 END AS sig,
		'idle-' || i AS key, now() + interval '1 day' AS deadline
	FROM generate_series(1, $1::int) AS i
),
t AS (
	INSERT INTO tasks (id, tenant, queue, kind, payload, state, run_at, lease_token, attempted_at, wait_reason)
	OVERRIDING SYSTEM VALUE
	SELECT task_id, 'default', 'default', 'steps',
		CASE WHEN sig
			THEN jsonb_build_object('steps', jsonb_build_array(jsonb_build_object('tool', 'wait_for_signal',
				'args', jsonb_build_object('signal', $3::text, 'key', key, 'timeout', '24h'))))
			ELSE '{"steps":[{"tool":"wait_timer","args":{"for":"24h"}}]}' END,
		'waiting', deadline, 1, now(), reason
	FROM g, LATERAL (SELECT CASE WHEN sig
		THEN 'waiting for signal ' || $3 || ' key ' || key || ' (wait ' || wait_id || ') until '
		ELSE 'waiting for a timer (wait ' || wait_id || ') due ' END
		|| to_char(deadline AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS "UTC"') AS reason) r
	RETURNING id, wait_reason
),
a AS (
	INSERT INTO task_attempts (task_id, lease_token, attempt, generation, worker, started_at, ended_at, outcome, error)
	SELECT id, 1, 1, 1, 'bench-fixture', now(), now(), 'deferred', wait_reason FROM t
),
w AS (
	INSERT INTO waits (id, task_id, generation, step, tenant, kind, signal, key, deadline)
	OVERRIDING SYSTEM VALUE
	SELECT wait_id, task_id, 1, 'tool/0', 'default', CASE WHEN sig THEN 'signal' ELSE 'timer' END,
		CASE WHEN sig THEN $3 END, CASE WHEN sig THEN key END, deadline
	FROM g
	RETURNING task_id
)
SELECT max(task_id) FROM w`

// insertWaits inserts n tasks waiting as waitsFixtureSQL says (kind
// signal, timer or mixed; signal waits for signal) and returns the highest
// task id.
func insertWaits(ctx context.Context, db *pgxpool.Pool, n int, kind, signal string) (int64, error) {
	var last int64
	err := db.QueryRow(ctx, waitsFixtureSQL, n, kind, signal).Scan(&last)
	if err != nil {
		return 0, fmt.Errorf("inserting %d tasks waiting (%s): %w", n, kind, err)
	}
	return last, nil
}
