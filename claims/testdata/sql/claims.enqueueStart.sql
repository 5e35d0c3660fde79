-- claims.enqueueStart: enqueueStartSQL of package claims, as Store.EnqueueStart sends it (18 parameters); go test ./claims -run TestGoldenSQL -update rewrites this file
/* claims.enqueueStart */
WITH probe AS MATERIALIZED (
	SELECT EXISTS (SELECT FROM tasks t WHERE t.queue = $13::text AND t.state = 'running'
			AND t.lease_expires_at <= coalesce($10::timestamptz, now())) AS expired,
		EXISTS (SELECT FROM tenant_shares s WHERE s.tenant = $14::text AND s.max_running IS NOT NULL) AS capped,
		count(*) > 64 OR coalesce(bool_or(r.run_at <= coalesce($10::timestamptz, now())
			AND (coalesce(cardinality($17::text[]), 0) = 0 OR r.kind = ANY ($17::text[]))
			AND (r.needs IS NULL OR $18::text[] IS NULL OR r.needs <@ $18::text[])), false) AS ahead
	FROM (SELECT t.run_at, t.kind, t.needs FROM tasks t WHERE t.queue = $13::text AND t.state IN ('queued', 'retrying', 'compensating')
		LIMIT 65) r
),
arrival AS (
	SELECT ((EXISTS (SELECT FROM tasks t WHERE t.queue = $13::text AND t.tenant < $14::text AND t.state IN ('queued', 'retrying', 'compensating'))
		OR EXISTS (SELECT FROM tasks t WHERE t.queue = $13::text AND t.tenant > $14::text AND t.state IN ('queued', 'retrying', 'compensating')))
		AND NOT EXISTS (SELECT FROM tasks t WHERE t.queue = $13::text AND t.tenant = $14::text AND t.state IN ('queued', 'retrying', 'compensating'))
		AND NOT EXISTS (SELECT FROM tenant_shares s WHERE s.tenant = $14::text AND s.max_running IS NOT NULL)) AS yes
),
alone AS (
	SELECT NOT (expired OR capped OR ahead) AS yes FROM probe
),
start AS (
	SELECT coalesce($10::timestamptz, now()) AS t,
		(extract(epoch FROM coalesce($10::timestamptz, now())) * 1000000)::bigint AS token_floor
),
ins AS (
	INSERT INTO tasks (tenant, queue, kind, payload, priority, run_at, max_attempts,
		submission_key, request_hash, traceparent, needs, newcomer,
		state, attempt, generation_claims, lease_owner, lease_token, lease_expires_at, attempted_at, capped)
	SELECT u.tenant, u.queue, u.kind, u.payload, u.priority,
		coalesce(u.run_at, coalesce($10::timestamptz, now())), u.max_attempts,
		u.submission_key, u.request_hash, $11::text, string_to_array(nullif(u.needs, ''), E'\n'),
		CASE WHEN u.started THEN NULL WHEN u.due AND u.first AND (SELECT yes FROM arrival) THEN true END,
		CASE WHEN u.started THEN 'running' ELSE 'queued' END,
		CASE WHEN u.started THEN 1 ELSE 0 END,
		CASE WHEN u.started THEN 1 ELSE 0 END,
		CASE WHEN u.started THEN $15::text END,
		CASE WHEN u.started THEN (SELECT token_floor FROM start) ELSE 0 END,
		CASE WHEN u.started THEN (SELECT t FROM start) + $16::interval END,
		CASE WHEN u.started THEN (SELECT t FROM start) END,
		CASE WHEN u.started THEN false END
	FROM (SELECT *, due AND (SELECT yes FROM alone) AS started FROM (
		SELECT *, row_number() OVER (PARTITION BY queue, tenant, due ORDER BY ord) = 1 AS first
		FROM (SELECT *, coalesce(run_at <= coalesce($10::timestamptz, now()), true) AS due FROM unnest($1::text[], $2::text[], $3::text[], $4::jsonb[], $5::smallint[],
			$6::timestamptz[], $7::int[], $8::text[], $9::bytea[], $12::text[])
			WITH ORDINALITY AS u(tenant, queue, kind, payload, priority, run_at,
			max_attempts, submission_key, request_hash, needs, ord)) u
	) s) u
	ORDER BY u.ord
	ON CONFLICT (tenant, submission_key) WHERE submission_key IS NOT NULL DO NOTHING
	RETURNING id, tenant, queue, kind, payload, priority, run_at, state,
	attempt, max_attempts, generation, lease_owner, lease_token, lease_expires_at,
	cancel_requested_at, result, last_error, submission_key, created_at,
	updated_at, finished_at, wait_reason, compensation, traceparent, replay_traceparent,
	generation_claims, needs
),
wake AS (
	SELECT pg_notify('agentledger_task_insert', q)
	FROM (SELECT DISTINCT queue AS q FROM ins WHERE state = 'queued' AND run_at <= coalesce($10::timestamptz, now())) s
)
SELECT ins.* FROM ins WHERE (SELECT count(*) FROM wake) >= 0
ORDER BY ins.id
