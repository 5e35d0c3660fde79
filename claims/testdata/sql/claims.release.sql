-- claims.release: releaseSQL of package claims, as Store.ReleaseMany sends it (3 parameters); go test ./claims -run TestGoldenSQL -update rewrites this file
/* claims.release */
WITH done AS (
	UPDATE tasks t SET
		state = CASE WHEN t.compensation IS NULL THEN 'queued' ELSE 'compensating' END,
		attempt = t.attempt - 1,
		run_at = coalesce($3::timestamptz, now()),
		lease_expires_at = NULL,
		updated_at = coalesce($3::timestamptz, now())
	WHERE t.id = ANY ($1::bigint[]) AND t.lease_token = ($2::jsonb -> t.id::text)::bigint
		AND t.lease_expires_at IS NOT NULL
	RETURNING t.id, t.lease_token, t.queue, t.attempt + 1 AS attempt, t.generation, t.lease_owner,
		coalesce(t.attempted_at, (SELECT p.updated_at FROM tasks p WHERE p.id = t.id)) AS attempted_at
),
closed AS (
	INSERT INTO task_attempts (task_id, lease_token, attempt, generation, worker, started_at, ended_at, outcome, error)
	SELECT id, lease_token, attempt, generation, lease_owner, attempted_at, coalesce($3::timestamptz, now()),
		'released', 'released by its worker at shutdown'
	FROM done
),
wake AS (
	SELECT pg_notify('agentledger_task_insert', q) FROM (SELECT DISTINCT queue AS q FROM done) s
)
SELECT done.id FROM done WHERE (SELECT count(*) FROM wake) >= 0
