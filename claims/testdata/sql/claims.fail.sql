-- claims.fail: failSQL of package claims, as Store.FailMany sends it (4 parameters); go test ./claims -run TestGoldenSQL -update rewrites this file
/* claims.fail */
WITH done AS (
	UPDATE tasks t SET
		state = CASE WHEN t.compensation IS NOT NULL THEN CASE WHEN (($3::jsonb -> t.id::text ->> 'final')::bool OR t.attempt >= t.max_attempts) THEN 'needs_attention' ELSE 'compensating' END
			WHEN (t.compensation IS NULL AND (t.cancel_requested_at IS NOT NULL OR (($3::jsonb -> t.id::text ->> 'final')::bool OR t.attempt >= t.max_attempts)) AND EXISTS (SELECT 1 FROM ledger l WHERE l.task_id = t.id AND l.generation = t.generation
		AND l.compensate IS NOT NULL AND l.state <> 'failed' AND NOT (l.state = 'unknown' AND l.retry_allowed))) THEN 'compensating'
			WHEN t.cancel_requested_at IS NOT NULL THEN 'cancelled'
			WHEN (($3::jsonb -> t.id::text ->> 'final')::bool OR t.attempt >= t.max_attempts) THEN 'dead' ELSE 'retrying' END,
		run_at = CASE WHEN (t.compensation IS NULL AND (t.cancel_requested_at IS NOT NULL OR (($3::jsonb -> t.id::text ->> 'final')::bool OR t.attempt >= t.max_attempts)) AND EXISTS (SELECT 1 FROM ledger l WHERE l.task_id = t.id AND l.generation = t.generation
		AND l.compensate IS NOT NULL AND l.state <> 'failed' AND NOT (l.state = 'unknown' AND l.retry_allowed))) THEN coalesce($4::timestamptz, now())
			WHEN t.cancel_requested_at IS NULL AND NOT (($3::jsonb -> t.id::text ->> 'final')::bool OR t.attempt >= t.max_attempts)
			THEN coalesce($4::timestamptz, now()) + ($3::jsonb -> t.id::text ->> 'delay_ms')::bigint * interval '1 millisecond' ELSE t.run_at END,
		finished_at = CASE WHEN t.compensation IS NULL AND (t.cancel_requested_at IS NOT NULL OR (($3::jsonb -> t.id::text ->> 'final')::bool OR t.attempt >= t.max_attempts))
			AND NOT (t.compensation IS NULL AND (t.cancel_requested_at IS NOT NULL OR (($3::jsonb -> t.id::text ->> 'final')::bool OR t.attempt >= t.max_attempts)) AND EXISTS (SELECT 1 FROM ledger l WHERE l.task_id = t.id AND l.generation = t.generation
		AND l.compensate IS NOT NULL AND l.state <> 'failed' AND NOT (l.state = 'unknown' AND l.retry_allowed))) THEN coalesce($4::timestamptz, now()) END,
		compensation = CASE WHEN (t.compensation IS NULL AND (t.cancel_requested_at IS NOT NULL OR (($3::jsonb -> t.id::text ->> 'final')::bool OR t.attempt >= t.max_attempts)) AND EXISTS (SELECT 1 FROM ledger l WHERE l.task_id = t.id AND l.generation = t.generation
		AND l.compensate IS NOT NULL AND l.state <> 'failed' AND NOT (l.state = 'unknown' AND l.retry_allowed))) THEN CASE WHEN t.cancel_requested_at IS NULL THEN 'failed' ELSE 'cancelled' END ELSE t.compensation END,
		attempt = CASE WHEN (t.compensation IS NULL AND (t.cancel_requested_at IS NOT NULL OR (($3::jsonb -> t.id::text ->> 'final')::bool OR t.attempt >= t.max_attempts)) AND EXISTS (SELECT 1 FROM ledger l WHERE l.task_id = t.id AND l.generation = t.generation
		AND l.compensate IS NOT NULL AND l.state <> 'failed' AND NOT (l.state = 'unknown' AND l.retry_allowed))) THEN 0 ELSE t.attempt END,
		cancel_requested_at = CASE WHEN (t.compensation IS NULL AND (t.cancel_requested_at IS NOT NULL OR (($3::jsonb -> t.id::text ->> 'final')::bool OR t.attempt >= t.max_attempts)) AND EXISTS (SELECT 1 FROM ledger l WHERE l.task_id = t.id AND l.generation = t.generation
		AND l.compensate IS NOT NULL AND l.state <> 'failed' AND NOT (l.state = 'unknown' AND l.retry_allowed))) THEN NULL ELSE t.cancel_requested_at END,
		last_error = ($3::jsonb -> t.id::text ->> 'error')::text,
		lease_expires_at = NULL,
		updated_at = coalesce($4::timestamptz, now())
	WHERE t.id = ANY ($1::bigint[]) AND t.lease_token = ($2::jsonb -> t.id::text)::bigint
		AND t.lease_expires_at IS NOT NULL
	RETURNING t.id, t.lease_token, CASE WHEN t.state = 'compensating' AND t.attempt = 0
		THEN (SELECT p.attempt FROM tasks p WHERE p.id = t.id) ELSE t.attempt END AS attempt,
		t.state = 'compensating' AND t.attempt = 0 AS entered, t.generation, t.tenant, t.queue, t.kind, t.state, t.max_attempts, t.last_error, t.result, t.lease_owner,
		coalesce(t.attempted_at, (SELECT p.updated_at FROM tasks p WHERE p.id = t.id)) AS attempted_at
),
closed AS (
	INSERT INTO task_attempts (task_id, lease_token, attempt, generation, worker, started_at, ended_at, outcome, error)
	SELECT id, lease_token, attempt, generation, lease_owner, attempted_at, coalesce($4::timestamptz, now()),
		CASE WHEN state = 'retrying' OR (state = 'compensating' AND NOT entered) THEN 'retry' ELSE state END, last_error
	FROM done
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
		SELECT * FROM done s
		WHERE coalesce(r.tenant = s.tenant, true)
			AND coalesce(r.queue = s.queue, true) AND coalesce(r.kind = s.kind, true)
			AND (s.state = ANY (r.events)
				OR s.state = ANY ('{retrying,needs_attention,succeeded,dead,cancelled,compensating,compensated}'::text[]) AND EXISTS (
					SELECT FROM outbox o WHERE o.task_id = s.id AND o.rule = r.name AND o.generation = s.generation))
		OFFSET 0
	) s
	WHERE r.enabled
	ORDER BY s.id, r.name
)
SELECT id, state FROM done
