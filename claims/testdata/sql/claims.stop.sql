-- claims.stop: stopSQL of package claims, as Store.Cancelled and Store.NeedsAttention send it (5 parameters); go test ./claims -run TestGoldenSQL -update rewrites this file
/* claims.stop */
WITH done AS (
	UPDATE tasks t SET
		state = CASE WHEN (t.compensation IS NULL AND ($5 = 'cancelled') AND EXISTS (SELECT 1 FROM ledger l WHERE l.task_id = t.id AND l.generation = t.generation
		AND l.compensate IS NOT NULL AND l.state <> 'failed' AND NOT (l.state = 'unknown' AND l.retry_allowed))) THEN 'compensating' ELSE $5 END,
		last_error = CASE WHEN $5 = 'cancelled' AND t.cancel_requested_by IS NOT NULL THEN 'cancelled by ' || t.cancel_requested_by ELSE $3 END,
		compensation = CASE WHEN (t.compensation IS NULL AND ($5 = 'cancelled') AND EXISTS (SELECT 1 FROM ledger l WHERE l.task_id = t.id AND l.generation = t.generation
		AND l.compensate IS NOT NULL AND l.state <> 'failed' AND NOT (l.state = 'unknown' AND l.retry_allowed))) THEN 'cancelled' ELSE t.compensation END,
		attempt = CASE WHEN (t.compensation IS NULL AND ($5 = 'cancelled') AND EXISTS (SELECT 1 FROM ledger l WHERE l.task_id = t.id AND l.generation = t.generation
		AND l.compensate IS NOT NULL AND l.state <> 'failed' AND NOT (l.state = 'unknown' AND l.retry_allowed))) THEN 0 ELSE t.attempt END,
		cancel_requested_at = CASE WHEN (t.compensation IS NULL AND ($5 = 'cancelled') AND EXISTS (SELECT 1 FROM ledger l WHERE l.task_id = t.id AND l.generation = t.generation
		AND l.compensate IS NOT NULL AND l.state <> 'failed' AND NOT (l.state = 'unknown' AND l.retry_allowed))) THEN NULL ELSE t.cancel_requested_at END,
		lease_expires_at = NULL,
		run_at = CASE WHEN (t.compensation IS NULL AND ($5 = 'cancelled') AND EXISTS (SELECT 1 FROM ledger l WHERE l.task_id = t.id AND l.generation = t.generation
		AND l.compensate IS NOT NULL AND l.state <> 'failed' AND NOT (l.state = 'unknown' AND l.retry_allowed))) THEN coalesce($4::timestamptz, now()) ELSE t.run_at END,
		finished_at = CASE WHEN $5 = 'cancelled' AND NOT (t.compensation IS NULL AND ($5 = 'cancelled') AND EXISTS (SELECT 1 FROM ledger l WHERE l.task_id = t.id AND l.generation = t.generation
		AND l.compensate IS NOT NULL AND l.state <> 'failed' AND NOT (l.state = 'unknown' AND l.retry_allowed))) THEN coalesce($4::timestamptz, now()) END,
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
	SELECT id, lease_token, attempt, generation, lease_owner, attempted_at, coalesce($4::timestamptz, now()), $5, last_error
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
),
-- a cancelled task waits for nothing more: its approval requests are
-- withdrawn, its waits cancelled (packages approvals, waits); the ids
-- drive both, through the tables' (task_id, …) keys
withdrawn AS (
	UPDATE approvals a SET state = 'withdrawn', decided_at = coalesce($4::timestamptz, now()),
		decided_by = coalesce((SELECT t.cancel_requested_by FROM tasks t WHERE t.id = a.task_id), 'operator'),
		decided_via = 'cancel', decision_reason = 'its task was cancelled'
	WHERE a.task_id = ANY (ARRAY(SELECT id FROM done WHERE $5 = 'cancelled')) AND a.state = 'pending'
),
unwaited AS (
	UPDATE waits w SET state = 'cancelled', ended_at = coalesce($4::timestamptz, now()),
		ended_by = coalesce((SELECT t.cancel_requested_by FROM tasks t WHERE t.id = w.task_id), 'operator'),
		end_reason = 'its task was cancelled'
	WHERE w.task_id = ANY (ARRAY(SELECT id FROM done WHERE $5 = 'cancelled')) AND w.ended_at IS NULL -- open (waits_check), read by the ids' key: not every open wait's index
)
SELECT id FROM done
