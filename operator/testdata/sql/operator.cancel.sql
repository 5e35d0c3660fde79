-- operator.cancel: cancelSQL of package operator, as Service.Cancel sends it (4 parameters); go test ./operator -run TestGoldenSQL -update rewrites this file
/* operator.cancel */
WITH now AS (SELECT coalesce($3::timestamptz, now()) AS t),
cur AS (
	SELECT id, state, state = 'running' AND lease_expires_at > now.t AS live, compensation IS NOT NULL AS undoing,
		lease_token, attempt, generation, lease_owner, coalesce(attempted_at, updated_at) AS attempted_at
	FROM tasks, now
	WHERE id = $1 AND ($2 = '' OR tenant = $2)
	FOR UPDATE OF tasks
),
upd AS (
	UPDATE tasks t SET
		state = CASE WHEN cur.live THEN 'running' WHEN EXISTS (SELECT 1 FROM ledger l WHERE l.task_id = t.id AND l.generation = t.generation
		AND l.compensate IS NOT NULL AND l.state <> 'failed' AND NOT (l.state = 'unknown' AND l.retry_allowed)) THEN 'compensating' ELSE 'cancelled' END,
		compensation = CASE WHEN NOT cur.live AND EXISTS (SELECT 1 FROM ledger l WHERE l.task_id = t.id AND l.generation = t.generation
		AND l.compensate IS NOT NULL AND l.state <> 'failed' AND NOT (l.state = 'unknown' AND l.retry_allowed)) THEN 'cancelled' END,
		attempt = CASE WHEN NOT cur.live AND EXISTS (SELECT 1 FROM ledger l WHERE l.task_id = t.id AND l.generation = t.generation
		AND l.compensate IS NOT NULL AND l.state <> 'failed' AND NOT (l.state = 'unknown' AND l.retry_allowed)) THEN 0 ELSE t.attempt END,
		cancel_requested_at = CASE WHEN NOT cur.live AND EXISTS (SELECT 1 FROM ledger l WHERE l.task_id = t.id AND l.generation = t.generation
		AND l.compensate IS NOT NULL AND l.state <> 'failed' AND NOT (l.state = 'unknown' AND l.retry_allowed)) THEN NULL ELSE coalesce(t.cancel_requested_at, now.t) END,
		run_at = CASE WHEN NOT cur.live AND EXISTS (SELECT 1 FROM ledger l WHERE l.task_id = t.id AND l.generation = t.generation
		AND l.compensate IS NOT NULL AND l.state <> 'failed' AND NOT (l.state = 'unknown' AND l.retry_allowed)) THEN now.t ELSE t.run_at END,
		finished_at = CASE WHEN NOT cur.live AND NOT EXISTS (SELECT 1 FROM ledger l WHERE l.task_id = t.id AND l.generation = t.generation
		AND l.compensate IS NOT NULL AND l.state <> 'failed' AND NOT (l.state = 'unknown' AND l.retry_allowed)) THEN now.t END,
		last_error = CASE WHEN cur.live THEN t.last_error ELSE 'cancelled by ' || coalesce($4::text, 'operator') END,
		cancel_requested_by = $4::text,
		lease_expires_at = CASE WHEN cur.live THEN t.lease_expires_at END,
		updated_at = now.t
	FROM cur, now
	WHERE t.id = cur.id AND cur.state NOT IN ('succeeded', 'dead', 'cancelled', 'compensated') AND NOT cur.undoing
	RETURNING t.id, t.generation, CASE WHEN t.state = 'compensating' AND t.attempt = 0
		THEN (SELECT p.attempt FROM tasks p WHERE p.id = t.id) ELSE t.attempt END AS attempt,
		t.state = 'compensating' AND t.attempt = 0 AS entered, t.tenant, t.queue, t.kind, t.state, t.max_attempts, t.last_error, t.result,
		CASE WHEN cur.live THEN pg_notify('agentledger_task_cancel', cur.id || ':' || cur.lease_token) END AS told
),
events AS (
	INSERT INTO outbox (tenant, task_id, generation, attempt, event, rule, channel, payload,
		available_at, created_at, updated_at)
	SELECT s.tenant, s.id, s.generation, s.attempt, s.state, r.name, r.channel,
		jsonb_strip_nulls(jsonb_build_object('kind', s.kind, 'queue', s.queue, 'state', s.state,
			'attempt', s.attempt, 'max_attempts', s.max_attempts,
			'error', left(s.last_error, 1000), 'result', left(s.result::text, 1000),
			'update_only', CASE WHEN NOT s.state = ANY (r.events) THEN true END)),
		(SELECT t FROM now), (SELECT t FROM now), (SELECT t FROM now)
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
lost AS (
	INSERT INTO task_attempts (task_id, lease_token, attempt, generation, worker, started_at, ended_at, outcome, error)
	SELECT cur.id, cur.lease_token, cur.attempt, cur.generation, cur.lease_owner, cur.attempted_at, now.t,
		'lease_expired', 'lease expired before the attempt finished; task cancelled by ' || coalesce($4, 'operator')
	FROM cur, now
	WHERE cur.state = 'running' AND NOT cur.live
	ON CONFLICT (task_id, lease_token) DO UPDATE SET
		ended_at = EXCLUDED.ended_at, outcome = EXCLUDED.outcome, error = EXCLUDED.error
),
-- a task waiting for a person's decision no longer does (package approvals)
withdrawn AS (
	UPDATE approvals a SET state = 'withdrawn', decided_at = now.t, decided_by = coalesce($4, 'operator'), decided_via = 'cancel',
		decision_reason = 'its task was cancelled'
	FROM upd, now
	WHERE a.task_id = upd.id AND a.state = 'pending' AND upd.state <> 'running'
),
-- nor for a signal, a timer or its children (package waits)
unwaited AS (
	UPDATE waits w SET state = 'cancelled', ended_at = now.t, ended_by = coalesce($4, 'operator'), end_reason = 'its task was cancelled'
	FROM upd, now
	WHERE w.task_id = upd.id AND w.ended_at IS NULL AND upd.state <> 'running' -- open: by the task's key, not every open wait's index
)
SELECT cur.state, upd.id IS NOT NULL, cur.undoing FROM cur LEFT JOIN upd ON upd.id = cur.id
