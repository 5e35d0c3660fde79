-- operator.requeue: requeueSQL of package operator, as Service.Retry and Service.RerunAnyway send it (6 parameters); go test ./operator -run TestGoldenSQL -update rewrites this file
/* operator.requeue */
WITH cur AS (
	SELECT id, state, ledger_expired_at IS NOT NULL AS expired, compensation IS NOT NULL AND state <> 'compensated' AS undoing FROM tasks
	WHERE id = $1 AND ($2 = '' OR tenant = $2)
	FOR UPDATE
),
upd AS (
	UPDATE tasks t SET
		state = CASE WHEN $3 = 0 AND t.compensation IS NOT NULL THEN 'compensating' ELSE 'queued' END,
		compensation = CASE WHEN $3 = 1 THEN NULL ELSE t.compensation END,
		compensation_requested_by = CASE WHEN $3 = 1 THEN NULL ELSE t.compensation_requested_by END,
		ledger_expired_at = CASE WHEN $3 = 1 THEN NULL ELSE t.ledger_expired_at END,
		generation = t.generation + $3,
		generation_claims = CASE WHEN $3 = 1 THEN 0 ELSE t.generation_claims END,
		attempt = 0,
		run_at = coalesce($5::timestamptz, now()),
		cancel_requested_at = NULL,
		finished_at = NULL,
		wait_reason = NULL, -- what it waited for last is over: a wait of the run to come says its own
		result = CASE WHEN $3 = 0 AND t.compensation IS NOT NULL THEN t.result END,
		replay_traceparent = $6::text,
		newcomer = NULL, -- a requeued task is not a newcomer, even one cancelled before its claim
		updated_at = coalesce($5::timestamptz, now())
	FROM cur
	WHERE t.id = cur.id AND t.state = ANY ($4::text[]) AND ($3 = 1 OR t.ledger_expired_at IS NULL)
		AND ($3 = 0 OR NOT cur.undoing) -- a re-run would leave a compensation half done
	RETURNING t.id, t.generation, t.state = 'compensating' AS undoing, CASE WHEN t.state = 'compensating' AND t.attempt = 0
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
		coalesce($5::timestamptz, now()), coalesce($5::timestamptz, now()), coalesce($5::timestamptz, now())
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
reopen AS (
	UPDATE ledger l SET state = 'pending',
		note = 'tried again by a replay of the compensation' || coalesce(' (it had failed: ' || l.error || ')', ''),
		error = NULL, completed_at = NULL, retry_allowed = false, updated_at = now()
	FROM upd
	WHERE upd.undoing AND l.task_id = upd.id AND l.generation = upd.generation
		AND starts_with(l.step_path, 'compensate/') AND l.state = 'failed' AND l.class IN ('keyed', 'reconcilable')
),
reread AS (
	UPDATE ledger l SET state = 'pending',
		note = 'tried again by a replay' || coalesce(' (it had failed: ' || l.error || ')', ''),
		error = NULL, completed_at = NULL, retry_allowed = false, updated_at = now()
	FROM upd
	WHERE NOT upd.undoing AND l.task_id = upd.id AND l.generation = upd.generation
		AND l.state = 'failed' AND l.class = 'pure' AND NOT starts_with(l.step_path, 'compensate/')
		AND NOT EXISTS (SELECT FROM ledger later WHERE later.task_id = l.task_id AND later.generation = l.generation
			AND later.seq > l.seq AND NOT starts_with(later.step_path, 'compensate/')
			AND NOT starts_with(later.step_path, 'notify/'))
	RETURNING l.task_id, l.generation, l.step_path
),
-- the waits a replay's forward path waits for anew (package waits): one
-- whose failed call it reopened (timed out, a child failed), and one that
-- ended without what it waited for (cancelled with its task, timed out,
-- ended by an operator) before any call recorded it; never one that ended
-- with it (a signal consumed, the children done) before its call recorded
-- it. Each gives its step to the wait to come, and is kept as it ended,
-- with who ended it and why (waits_replaced).
rewait AS (
	DELETE FROM waits w USING upd
	WHERE $3 = 0 AND NOT upd.undoing AND w.task_id = upd.id AND w.generation = upd.generation AND w.state <> 'waiting'
		AND (EXISTS (SELECT FROM reread r WHERE r.task_id = w.task_id AND r.generation = w.generation AND r.step_path = w.step)
			OR w.state IN ('cancelled', 'timed_out', 'ended') AND NOT EXISTS (SELECT FROM ledger l WHERE l.task_id = w.task_id
				AND l.generation = w.generation AND l.step_path = w.step))
	RETURNING w.id, w.task_id, w.generation, w.step, w.tenant, w.kind, w.signal, w.key, w.spec, w.created_at, w.deadline,
		w.state, w.result, w.signal_id, w.ended_at, w.ended_by, w.end_reason
),
replaced AS (
	INSERT INTO waits_replaced (id, task_id, generation, step, tenant, kind, signal, key, spec, created_at, deadline,
		state, result, signal_id, ended_at, ended_by, end_reason, replaced_at)
	SELECT r.*, coalesce($5::timestamptz, now()) FROM rewait r
	ON CONFLICT (id) DO NOTHING
),
wake AS (
	SELECT pg_notify('agentledger_task_insert', t.queue) FROM tasks t JOIN upd ON upd.id = t.id
)
SELECT cur.state, cur.expired, cur.undoing, upd.id IS NOT NULL, (SELECT count(*) FROM wake) FROM cur LEFT JOIN upd ON upd.id = cur.id
