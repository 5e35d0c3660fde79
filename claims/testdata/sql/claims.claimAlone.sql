-- claims.claimAlone: claimAloneSQL of package claims, as Store.Claim sends it (12 parameters); go test ./claims -run TestGoldenSQL -update rewrites this file
/* claims.claimAlone */
WITH now AS (SELECT coalesce($5::timestamptz, now()) AS t,
	(extract(epoch FROM coalesce($5::timestamptz, now())) * 1000000)::bigint AS token_floor),
due AS (
	SELECT ctid FROM tasks
	WHERE queue = $1 AND tenant = (SELECT $8::text)
		AND (priority, run_at, id) > ((SELECT $9::int), (SELECT $10::timestamptz), (SELECT $11::bigint))
		AND CASE WHEN xmax = '0'::xid THEN true WHEN (SELECT $12::bool) THEN false ELSE currtid2('tasks', ctid) = ctid END
		AND state IN ('queued', 'retrying', 'compensating') AND run_at <= coalesce($5::timestamptz, now())
			AND (coalesce(cardinality($6::text[]), 0) = 0 OR kind = ANY ($6::text[]))
			AND (needs IS NULL OR $7::text[] IS NULL OR needs <@ $7::text[])
		AND (SELECT o.tenant FROM tasks o
			WHERE o.queue = $1 AND o.tenant > (SELECT $8::text) AND state IN ('queued', 'retrying', 'compensating') AND run_at <= coalesce($5::timestamptz, now())
			AND (coalesce(cardinality($6::text[]), 0) = 0 OR kind = ANY ($6::text[]))
			AND (needs IS NULL OR $7::text[] IS NULL OR needs <@ $7::text[])
			ORDER BY o.tenant, o.priority, o.run_at, o.id
			LIMIT 1) IS NULL
		AND (SELECT o.tenant FROM tasks o
			WHERE o.queue = $1 AND o.tenant < (SELECT $8::text) AND state IN ('queued', 'retrying', 'compensating') AND run_at <= coalesce($5::timestamptz, now())
			AND (coalesce(cardinality($6::text[]), 0) = 0 OR kind = ANY ($6::text[]))
			AND (needs IS NULL OR $7::text[] IS NULL OR needs <@ $7::text[])
			ORDER BY o.tenant DESC, o.priority DESC, o.run_at DESC, o.id DESC
			LIMIT 1) IS NULL
		AND NOT EXISTS (SELECT FROM tenant_shares s WHERE s.tenant = $8::text AND s.max_running IS NOT NULL)
	ORDER BY priority, run_at, id
	LIMIT (SELECT $3::int)
	FOR UPDATE OF tasks SKIP LOCKED
)
UPDATE tasks t SET
	state = 'running',
	attempt = t.attempt + 1,
	generation_claims = t.generation_claims + 1,
	lease_owner = $2,
	lease_token = greatest(t.lease_token + 1, now.token_floor),
	lease_expires_at = now.t + $4::interval,
	attempted_at = now.t,
	updated_at = now.t,
	newcomer = NULL,
	wait_reason = (SELECT NULL::text FROM set_config('synchronous_commit',
	CASE current_setting('synchronous_standby_names') WHEN '' THEN 'off' ELSE current_setting('synchronous_commit') END, true)),
	capped = false
FROM now
WHERE t.ctid = ANY (ARRAY(SELECT ctid FROM due))
RETURNING t.id, t.tenant, t.queue, t.kind, t.payload, t.priority, t.run_at, t.state, t.attempt, t.max_attempts, t.generation, t.lease_owner, t.lease_token, t.lease_expires_at, t.cancel_requested_at, t.result, t.last_error, t.submission_key, t.created_at, t.updated_at, t.finished_at, t.wait_reason, t.compensation, t.traceparent, t.replay_traceparent, t.generation_claims, t.needs, false
