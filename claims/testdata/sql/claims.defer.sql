-- claims.defer: deferSQL of package claims, as Store.DeferMany sends it (4 parameters); go test ./claims -run TestGoldenSQL -update rewrites this file
/* claims.defer */
WITH done AS (
	UPDATE tasks t SET
		state = CASE WHEN ($3::jsonb -> t.id::text ->> 'park')::bool AND t.compensation IS NULL AND t.cancel_requested_at IS NULL
			AND t.run_at <= t.attempted_at THEN 'waiting' ELSE CASE WHEN t.compensation IS NULL THEN 'queued' ELSE 'compensating' END END,
		attempt = t.attempt - 1,
		run_at = CASE WHEN t.cancel_requested_at IS NULL AND NOT (($3::jsonb -> t.id::text ->> 'park')::bool AND t.run_at > t.attempted_at)
			THEN ($3::jsonb -> t.id::text ->> 'until')::timestamptz
			ELSE coalesce($4::timestamptz, now()) END,
		wait_reason = CASE WHEN t.cancel_requested_at IS NULL AND NOT (($3::jsonb -> t.id::text ->> 'park')::bool AND t.run_at > t.attempted_at)
			THEN $3::jsonb -> t.id::text ->> 'reason' END,
		lease_expires_at = NULL,
		updated_at = coalesce($4::timestamptz, now())
	WHERE t.id = ANY ($1::bigint[]) AND t.lease_token = ($2::jsonb -> t.id::text)::bigint
		AND t.lease_expires_at IS NOT NULL
	RETURNING t.id, t.lease_token, t.attempt + 1 AS attempt, t.generation, $3::jsonb -> t.id::text ->> 'reason' AS wait_reason, t.lease_owner,
		coalesce(t.attempted_at, (SELECT p.updated_at FROM tasks p WHERE p.id = t.id)) AS attempted_at
),
closed AS (
	INSERT INTO task_attempts (task_id, lease_token, attempt, generation, worker, started_at, ended_at, outcome, error)
	SELECT id, lease_token, attempt, generation, lease_owner, attempted_at, coalesce($4::timestamptz, now()),
		'deferred', wait_reason
	FROM done
	WHERE NOT EXISTS (
		SELECT FROM (SELECT outcome FROM task_attempts a WHERE a.task_id = done.id ORDER BY a.lease_token DESC LIMIT 1) last
		WHERE last.outcome = 'deferred')
		OR EXISTS (SELECT FROM ledger l WHERE l.task_id = done.id AND l.generation = done.generation AND l.owner_token = done.lease_token)
		OR ($3::jsonb -> done.id::text ->> 'performed')::bool IS TRUE
)
SELECT id FROM done
