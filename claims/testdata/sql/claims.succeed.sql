-- claims.succeed: succeedSQL of package claims, as Store.SucceedMany sends it (4 parameters); go test ./claims -run TestGoldenSQL -update rewrites this file
/* claims.succeed */
WITH done AS (
	UPDATE tasks t SET
		state = CASE WHEN t.compensation IS NULL THEN 'succeeded' ELSE 'compensated' END,
		result = $3::jsonb -> t.id::text,
		last_error = NULL, -- the failures before are in the attempt records
		lease_expires_at = NULL,
		finished_at = coalesce($4::timestamptz, now()),
		updated_at = coalesce($4::timestamptz, now())
	WHERE t.id = ANY ($1::bigint[]) AND t.lease_token = ($2::jsonb -> t.id::text)::bigint
		AND t.lease_expires_at IS NOT NULL
	RETURNING t.id, t.lease_token, t.attempt, t.generation, t.tenant, t.queue, t.kind, t.state, t.max_attempts, t.last_error, t.result, t.lease_owner,
		coalesce(t.attempted_at, (SELECT p.updated_at FROM tasks p WHERE p.id = t.id)) AS attempted_at
),
closed AS (
	INSERT INTO task_attempts (task_id, lease_token, attempt, generation, worker, started_at, ended_at, outcome)
	SELECT id, lease_token, attempt, generation, lease_owner, attempted_at, coalesce($4::timestamptz, now()), state
	FROM done WHERE state <> 'succeeded'
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
SELECT id FROM done
