package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Fixtures for the growth command: history pre-inserted set-wise, one
// INSERT … SELECT over generate_series per chunk of fixtureChunk rows (a
// chunk a statement, so that progress can be printed), into the real,
// logged tables with all their indexes. This is benchmark-only data: the
// SQL of these tables otherwise lives in packages claims and ledger.

// fixtureChunk is how many rows one fixture statement inserts.
const fixtureChunk = 1_000_000

// finishedTasksSQL inserts succeeded no-op tasks $1..$2 of $3, finished
// over the last 29 days in id order (within the 30 days tasks are kept).
// Each holds its attempt's record, as a first-try success does
// (attempt_records): none is written to task_attempts.
const finishedTasksSQL = `
INSERT INTO tasks (tenant, queue, kind, payload, priority, run_at, state, attempt, max_attempts,
	generation, lease_owner, lease_token, created_at, updated_at, finished_at, attempted_at)
SELECT 'default', 'default', 'noop', '{}', 0, t.at, 'succeeded', 1, 25,
	1, 'history', 1, t.at, t.at + interval '5 ms', t.at + interval '5 ms', t.at
FROM generate_series($1::bigint, $2::bigint) AS g(i),
	LATERAL (SELECT now() - interval '29 days' + (g.i::float8 / $3) * interval '29 days' AS at) t`

// ledgerRowsSQL inserts completed keyed http_request effects $1..$2. The
// first $3 rows are steps tool/0… of task $4, the rest three steps each of
// tasks from 1,000,000,000 on (tasks that are not in the tasks table). Keys
// are derived as ledger.EffectKey derives them (generation 1, tenant
// "default"), so the ledger serves any of them to an attempt of its task;
// $5 is the request hash of every row. A chunk is inserted in key order:
// its inserts then sweep the primary key's leaves in order instead of
// touching them at random, while the pages still split as they would
// (real keys arrive in no order).
const ledgerRowsSQL = `
INSERT INTO ledger (tenant, operation, effect_key, request_hash, class, state, task_id, generation,
	step_path, owner_token, performed, result, created_at, updated_at, completed_at)
SELECT 'default', 'http_request', k.key, $5::bytea, 'keyed', 'completed', r.task_id, 1, 'tool/' || r.step, 1, 1,
	jsonb_build_object('status', 201, 'body', jsonb_build_object('id', 'eff_' || g.i, 'effect', g.i)),
	now(), now(), now()
FROM generate_series($1::bigint, $2::bigint) AS g(i),
	LATERAL (SELECT
		CASE WHEN g.i <= $3 THEN $4::bigint ELSE 1000000000 + (g.i - $3 - 1) / 3 END AS task_id,
		CASE WHEN g.i <= $3 THEN g.i - 1 ELSE (g.i - $3 - 1) % 3 END AS step) r,
	LATERAL (SELECT encode(sha256(convert_to('["agentledger.effect.v1","default",' || r.task_id || ',1,"tool/' ||
		r.step || '","http_request"]', 'UTF8')), 'hex') AS key) k
ORDER BY k.key`

// fill runs stmt over rows 1..n in chunks, args after the range being
// extra, printing progress to w as what.
func fill(ctx context.Context, db *pgxpool.Pool, w io.Writer, what string, n int64, stmt string, extra ...any) error {
	start := time.Now()
	for lo := int64(1); lo <= n; lo += fixtureChunk {
		hi := min(lo+fixtureChunk-1, n)
		err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SET LOCAL work_mem = '256MB'"); err != nil { // sort a chunk in memory
				return err
			}
			_, err := tx.Exec(ctx, stmt, append([]any{lo, hi}, extra...)...)
			return err
		})
		if err != nil {
			return fmt.Errorf("inserting %s: %w", what, err)
		}
		el := time.Since(start)
		fmt.Fprintf(w, "  %s: %d/%d rows, %.0fs, %.0f rows/s\n", what, hi, n, el.Seconds(), float64(hi)/el.Seconds())
	}
	return nil
}

// timed runs step, printing what it was and how long it took to w.
func timed(w io.Writer, what string, step func() error) error {
	start := time.Now()
	fmt.Fprintf(w, "  %s…\n", what)
	if err := step(); err != nil {
		return err
	}
	fmt.Fprintf(w, "  %s: %.1fs\n", what, time.Since(start).Seconds())
	return nil
}
