-- claims.claimRun: claimRunSQL of package claims, as Store.Claim sends it (11 parameters); go test ./claims -run TestGoldenSQL -update rewrites this file
/* claims.claimRun */
WITH now AS (SELECT coalesce($5::timestamptz, now()) AS t,
	(extract(epoch FROM coalesce($5::timestamptz, now())) * 1000000)::bigint AS token_floor),
-- whether crowdAt tenants have due tasks from the cursor on: trusted
-- ($11), or read (an InitPlan, run only when $11 is false)
crowd AS (
	SELECT $11::bool OR (SELECT count(*) >= greatest(ceil($3 / 4.0)::int, 64) FROM (
		SELECT tenant FROM (
			SELECT tenant, tenant IS DISTINCT FROM lag(tenant) OVER (ORDER BY tenant, priority, run_at, id) AS first
			FROM (
				SELECT tenant, priority, run_at, id FROM tasks
				WHERE queue = $1 AND tenant >= (SELECT $8::text) AND state IN ('queued', 'retrying', 'compensating') AND run_at <= coalesce($5::timestamptz, now())
			AND (coalesce(cardinality($6::text[]), 0) = 0 OR kind = ANY ($6::text[]))
			AND (needs IS NULL OR $7::text[] IS NULL OR needs <@ $7::text[])
				ORDER BY tenant, priority, run_at, id
				LIMIT (SELECT 8 * greatest(ceil($3 / 4.0)::int, 64))
			) o
		) w
		WHERE first
		LIMIT (SELECT greatest(ceil($3 / 4.0)::int, 64))
	) h) AS yes
),
lane_heads AS (
	SELECT DISTINCT ON (tenant) id, run_at FROM (
		SELECT id, tenant, run_at FROM tasks
		WHERE queue = $1 AND newcomer AND state = 'queued' AND state IN ('queued', 'retrying', 'compensating') AND run_at <= coalesce($5::timestamptz, now())
			AND (coalesce(cardinality($6::text[]), 0) = 0 OR kind = ANY ($6::text[]))
			AND (needs IS NULL OR $7::text[] IS NULL OR needs <@ $7::text[])
			AND NOT EXISTS (SELECT FROM tenant_shares s WHERE s.tenant = tasks.tenant AND s.max_running IS NOT NULL)
			AND (SELECT $10::int)::int > 0 AND (SELECT yes FROM crowd)
		ORDER BY run_at, id
		LIMIT 4 * (SELECT $10::int)
	) c
	ORDER BY tenant, run_at, id
),
lane AS (
	SELECT id, ctid, priority, run_at FROM tasks
	WHERE id = ANY (ARRAY(SELECT id FROM lane_heads ORDER BY run_at, id LIMIT (SELECT $10::int))) AND state IN ('queued', 'retrying', 'compensating') AND run_at <= coalesce($5::timestamptz, now())
			AND (coalesce(cardinality($6::text[]), 0) = 0 OR kind = ANY ($6::text[]))
			AND (needs IS NULL OR $7::text[] IS NULL OR needs <@ $7::text[]) AND CASE WHEN xmax = '0'::xid THEN true ELSE currtid2('tasks', ctid) = ctid END
	FOR UPDATE OF tasks SKIP LOCKED
),
lane_ids AS (
	SELECT coalesce(array_agg(id), '{}') AS ids FROM lane
),
-- whether any tenant has a share row (a weight or a cap)
shares AS (
	SELECT EXISTS (SELECT FROM tenant_shares) AS yes
),
-- each tenant's first tasks up to its turn, in rotation order, read as
-- the batch pulls them: the entries past the cursor (the lane's left
-- out, as the full claim's turns leave them out), numbered within each
-- tenant (k). While no tenant has a share row every turn is the same;
-- otherwise a tenant's share row is looked up at its first entry and,
-- if it has a cap, its room counted, and both hold for its other
-- entries. The branch not taken is never started (a one-time filter).
turns AS (
	(SELECT ctid FROM (
		SELECT id, ctid, tenant, priority, run_at, row_number() OVER (PARTITION BY tenant ORDER BY priority, run_at, id) AS k
		FROM (
				SELECT id, ctid, tenant, priority, run_at FROM tasks
				WHERE queue = $1 AND tenant >= (SELECT $8::text) AND id <> ALL ((SELECT ids FROM lane_ids)::bigint[]) AND CASE WHEN xmax = '0'::xid THEN true ELSE currtid2('tasks', ctid) = ctid END AND state IN ('queued', 'retrying', 'compensating') AND run_at <= coalesce($5::timestamptz, now())
			AND (coalesce(cardinality($6::text[]), 0) = 0 OR kind = ANY ($6::text[]))
			AND (needs IS NULL OR $7::text[] IS NULL OR needs <@ $7::text[])
				ORDER BY tenant, priority, run_at, id
				LIMIT (SELECT 8 * greatest(greatest(ceil($3 / 4.0)::int, 64), $3::int))
		) o
	) r
	WHERE NOT (SELECT yes FROM shares)
		AND k <= ceil(greatest($3, 64)::float8 / greatest(ceil($3 / 4.0)::int, 64))::int - CASE WHEN tenant = $8::text THEN $9::int ELSE 0 END
	ORDER BY tenant, priority, run_at, id
	LIMIT (SELECT $3::int - cardinality(ids) FROM lane_ids))
	UNION ALL
	(SELECT ctid FROM (
		SELECT r.id, r.ctid, r.tenant, r.priority, r.run_at, r.k,
			max(CASE WHEN r.k = 1 THEN ceil(greatest($3, 64) * coalesce(s.weight, 1)::float8 / greatest(ceil($3 / 4.0)::int, 64))::int END) OVER w AS turn,
			max(CASE WHEN r.k = 1 AND s.max_running IS NOT NULL THEN agentledger_tenant_turn(r.tenant) END) OVER w AS room
		FROM (
			SELECT id, ctid, tenant, priority, run_at, row_number() OVER (PARTITION BY tenant ORDER BY priority, run_at, id) AS k
		FROM (
				SELECT id, ctid, tenant, priority, run_at FROM tasks
				WHERE queue = $1 AND tenant >= (SELECT $8::text) AND id <> ALL ((SELECT ids FROM lane_ids)::bigint[]) AND CASE WHEN xmax = '0'::xid THEN true ELSE currtid2('tasks', ctid) = ctid END AND state IN ('queued', 'retrying', 'compensating') AND run_at <= coalesce($5::timestamptz, now())
			AND (coalesce(cardinality($6::text[]), 0) = 0 OR kind = ANY ($6::text[]))
			AND (needs IS NULL OR $7::text[] IS NULL OR needs <@ $7::text[])
				ORDER BY tenant, priority, run_at, id
				LIMIT (SELECT 8 * greatest(greatest(ceil($3 / 4.0)::int, 64), $3::int))
		) o
		) r
		LEFT JOIN LATERAL (
			SELECT weight, max_running FROM tenant_shares s
			WHERE s.tenant = r.tenant AND r.k = 1
			OFFSET 0
		) s ON true
		WINDOW w AS (PARTITION BY r.tenant ORDER BY r.priority, r.run_at, r.id ROWS UNBOUNDED PRECEDING)
	) t
	WHERE (SELECT yes FROM shares)
		AND k <= least(turn, room) - CASE WHEN tenant = $8::text THEN $9::int ELSE 0 END
	ORDER BY tenant, priority, run_at, id
	LIMIT (SELECT $3::int - cardinality(ids) FROM lane_ids))
),
locked AS (
	SELECT ctid, tenant FROM tasks
	WHERE ctid = ANY (ARRAY(SELECT ctid FROM turns)) AND state IN ('queued', 'retrying', 'compensating') AND run_at <= coalesce($5::timestamptz, now())
			AND (coalesce(cardinality($6::text[]), 0) = 0 OR kind = ANY ($6::text[]))
			AND (needs IS NULL OR $7::text[] IS NULL OR needs <@ $7::text[]) AND CASE WHEN xmax = '0'::xid THEN true ELSE currtid2('tasks', ctid) = ctid END
	FOR UPDATE OF tasks SKIP LOCKED
),
due AS (
	SELECT ctid FROM (
		SELECT ctid FROM lane
		UNION ALL
		SELECT ctid FROM locked
	) c
	WHERE (SELECT yes FROM crowd)
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
	capped = CASE WHEN EXISTS (SELECT FROM tenant_shares WHERE max_running IS NOT NULL)
		THEN EXISTS (SELECT FROM tenant_shares s WHERE s.tenant = t.tenant AND s.max_running IS NOT NULL)
		ELSE false END
FROM now
WHERE t.ctid = ANY (ARRAY(SELECT ctid FROM due))
RETURNING t.id, t.tenant, t.queue, t.kind, t.payload, t.priority, t.run_at, t.state, t.attempt, t.max_attempts, t.generation, t.lease_owner, t.lease_token, t.lease_expires_at, t.cancel_requested_at, t.result, t.last_error, t.submission_key, t.created_at, t.updated_at, t.finished_at, t.wait_reason, t.compensation, t.traceparent, t.replay_traceparent, t.generation_claims, t.needs, t.id = ANY ((SELECT ids FROM lane_ids)::bigint[]), (SELECT max(tenant) FROM locked)
