-- operator.compensate: compensateSQL of package operator, as Service.Compensate sends it (4 parameters); go test ./operator -run TestGoldenSQL -update rewrites this file
/* operator.compensate */
WITH cur AS (
	SELECT id, state, compensation IS NOT NULL AS undoing FROM tasks
	WHERE id = $1 AND ($2 = '' OR tenant = $2)
	FOR UPDATE
),
upd AS (
	UPDATE tasks t SET
		state = 'compensating',
		compensation = 'operator',
		attempt = 0,
		run_at = coalesce($4::timestamptz, now()),
		cancel_requested_at = NULL,
		finished_at = NULL,
		updated_at = coalesce($4::timestamptz, now())
	FROM cur
	WHERE t.id = cur.id AND t.state = ANY ($3::text[]) AND t.compensation IS NULL AND EXISTS (SELECT 1 FROM ledger l WHERE l.task_id = t.id AND l.generation = t.generation
		AND l.compensate IS NOT NULL AND l.state <> 'failed' AND NOT (l.state = 'unknown' AND l.retry_allowed))
	RETURNING t.id
),
wake AS (
	SELECT pg_notify('agentledger_task_insert', t.queue) FROM tasks t JOIN upd ON upd.id = t.id
)
SELECT cur.state, cur.undoing, upd.id IS NOT NULL, (SELECT count(*) FROM wake) FROM cur LEFT JOIN upd ON upd.id = cur.id
