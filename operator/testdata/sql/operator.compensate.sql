-- operator.compensate: compensateSQL of package operator, as Service.CompensateBy sends it (5 parameters); go test ./operator -run TestGoldenSQL -update rewrites this file
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
		compensation_requested_by = $5::text,
		attempt = 0,
		run_at = coalesce($4::timestamptz, now()),
		cancel_requested_at = NULL,
		finished_at = NULL,
		wait_reason = NULL,
		updated_at = coalesce($4::timestamptz, now())
	FROM cur
	WHERE t.id = cur.id AND t.state = ANY ($3::text[]) AND t.compensation IS NULL AND EXISTS (SELECT 1 FROM ledger l WHERE l.task_id = t.id AND l.generation = t.generation
		AND l.compensate IS NOT NULL AND l.state <> 'failed' AND NOT (l.state = 'unknown' AND l.retry_allowed))
	RETURNING t.id, t.generation, CASE WHEN t.state = 'compensating' AND t.attempt = 0
		THEN (SELECT p.attempt FROM tasks p WHERE p.id = t.id) ELSE t.attempt END AS attempt,
		t.state = 'compensating' AND t.attempt = 0 AS entered, t.tenant, t.queue, t.kind, t.state, t.max_attempts, t.last_error, t.result
),
events AS (
	INSERT INTO outbox (tenant, task_id, generation, attempt, event, rule, channel, payload,
		available_at, created_at, updated_at)
	SELECT s.tenant, s.id, s.generation, s.attempt, s.state, r.name, r.channel,
		jsonb_strip_nulls(jsonb_build_object('kind', s.kind, 'queue', s.queue, 'state', s.state,
			'attempt', s.attempt, 'max_attempts', s.max_attempts,
			'error', left(s.last_error, 1000), 'result', left(s.result::text, 1000),
			'update_only', CASE WHEN NOT s.state = ANY (r.events) THEN true END)),
		coalesce($4::timestamptz, now()), coalesce($4::timestamptz, now()), coalesce($4::timestamptz, now())
	FROM notification_rules r CROSS JOIN LATERAL (
		SELECT * FROM upd s
		WHERE coalesce(r.tenant = s.tenant, true)
			AND coalesce(r.queue = s.queue, true) AND coalesce(r.kind = s.kind, true)
			AND (s.state = ANY (r.events)
				OR s.state = ANY ('{retrying,needs_attention,succeeded,dead,cancelled,compensating,compensated}'::text[]) AND EXISTS (
					SELECT FROM outbox o WHERE o.task_id = s.id AND o.rule = r.name AND o.generation = s.generation))
		OFFSET 0
	) s
	WHERE r.enabled
	ORDER BY s.id, r.name
),
wake AS (
	SELECT pg_notify('agentledger_task_insert', t.queue) FROM tasks t JOIN upd ON upd.id = t.id
)
SELECT cur.state, cur.undoing, upd.id IS NOT NULL, (SELECT count(*) FROM wake) FROM cur LEFT JOIN upd ON upd.id = cur.id
