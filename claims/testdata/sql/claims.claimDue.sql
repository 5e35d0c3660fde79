-- claims.claimDue: claimDueSQL of package claims, as Store.Claim sends it (10 parameters); go test ./claims -run TestGoldenSQL -update rewrites this file
/* claims.claimDue */
WITH RECURSIVE now AS (SELECT coalesce($5::timestamptz, now()) AS t,
	(extract(epoch FROM coalesce($5::timestamptz, now())) * 1000000)::bigint AS token_floor),
walk AS (
	(SELECT tenant, priority FROM tasks
	WHERE queue = $1 AND tenant >= $8::text AND state IN ('queued', 'retrying', 'compensating') AND run_at <= coalesce($5::timestamptz, now())
			AND (coalesce(cardinality($6::text[]), 0) = 0 OR kind = ANY ($6::text[]))
			AND (needs IS NULL OR $7::text[] IS NULL OR needs <@ $7::text[])
	ORDER BY tenant, priority, run_at, id
	LIMIT 1)
	UNION ALL
	SELECT n.tenant, n.priority
	FROM walk h
	CROSS JOIN LATERAL (
		SELECT tenant, priority FROM tasks
		WHERE queue = $1 AND tenant > h.tenant AND state IN ('queued', 'retrying', 'compensating') AND run_at <= coalesce($5::timestamptz, now())
			AND (coalesce(cardinality($6::text[]), 0) = 0 OR kind = ANY ($6::text[]))
			AND (needs IS NULL OR $7::text[] IS NULL OR needs <@ $7::text[])
		ORDER BY tenant, priority, run_at, id
		LIMIT 1
	) n
),
wrap AS (
	(SELECT tenant, priority FROM tasks
	WHERE queue = $1 AND tenant < $8::text AND state IN ('queued', 'retrying', 'compensating') AND run_at <= coalesce($5::timestamptz, now())
			AND (coalesce(cardinality($6::text[]), 0) = 0 OR kind = ANY ($6::text[]))
			AND (needs IS NULL OR $7::text[] IS NULL OR needs <@ $7::text[])
	ORDER BY tenant, priority, run_at, id
	LIMIT 1)
	UNION ALL
	SELECT n.tenant, n.priority
	FROM wrap h
	CROSS JOIN LATERAL (
		SELECT tenant, priority FROM tasks
		WHERE queue = $1 AND tenant > h.tenant AND tenant < $8::text AND state IN ('queued', 'retrying', 'compensating') AND run_at <= coalesce($5::timestamptz, now())
			AND (coalesce(cardinality($6::text[]), 0) = 0 OR kind = ANY ($6::text[]))
			AND (needs IS NULL OR $7::text[] IS NULL OR needs <@ $7::text[])
		ORDER BY tenant, priority, run_at, id
		LIMIT 1
	) n
),
-- the tenants with due tasks in rotation order: from the one the pool's
-- last claim served last ($8), then from the first up to it; read lazily
ring AS (
	SELECT tenant, priority FROM walk
	UNION ALL
	SELECT tenant, priority FROM wrap
),
crowd AS (
	SELECT count(*) >= greatest(ceil($3 / 4.0)::int, 64) AS yes FROM (SELECT FROM ring LIMIT greatest(ceil($3 / 4.0)::int, 64)) r
),
heads AS (
	SELECT tenant, priority FROM ring LIMIT greatest(ceil($3 / 4.0)::int, 64)
),
shares AS (
	SELECT h.tenant, h.priority, coalesce(s.weight, 1) AS weight, s.max_running
	FROM heads h LEFT JOIN tenant_shares s ON s.tenant = h.tenant
),
room AS (
	SELECT coalesce(jsonb_object_agg(tenant, room), '{}') AS m
	FROM agentledger_tenant_room(ARRAY(SELECT tenant FROM shares WHERE max_running IS NOT NULL))
	WHERE EXISTS (SELECT FROM shares WHERE max_running IS NOT NULL)
),
open AS (
	SELECT tenant, priority, weight, room FROM (
		SELECT tenant, priority, weight, ((SELECT m FROM room) ->> tenant)::int AS room FROM shares OFFSET 0
	) h
	WHERE coalesce(room, 1) > 0
),
quota AS (
	SELECT tenant, room, priority, weight, -ln(1 - random()) / weight AS draw,
		least(room, ceil($3 * weight::float8 / sum(weight) OVER ())::int) AS quota
	FROM open
),
busy AS (
	SELECT coalesce(jsonb_object_agg(tenant, n), '{}') AS m
	FROM (SELECT tenant, count(*) AS n FROM tasks WHERE queue = $1 AND state = 'running' GROUP BY tenant) r
	WHERE (SELECT sum(quota) FROM quota) > $3
),
give AS (
	SELECT tenant, room, row_number() OVER w AS ord,
		greatest(least(quota, $3 - sum(quota) OVER w + quota), 0)::int AS n
	FROM (
		SELECT tenant, room, priority, draw, quota,
			coalesce(((SELECT m FROM busy) ->> tenant)::float8, 0) / weight AS load
		FROM quota
	) q
	WINDOW w AS (ORDER BY priority, load, draw, tenant ROWS UNBOUNDED PRECEDING)
),
fair AS (
	SELECT f.id, f.tenant, f.priority, f.run_at
	FROM give g
	CROSS JOIN LATERAL (
		SELECT id, tenant, priority, run_at FROM tasks
		WHERE queue = $1 AND tenant = g.tenant AND state IN ('queued', 'retrying', 'compensating') AND run_at <= coalesce($5::timestamptz, now())
			AND (coalesce(cardinality($6::text[]), 0) = 0 OR kind = ANY ($6::text[]))
			AND (needs IS NULL OR $7::text[] IS NULL OR needs <@ $7::text[]) AND CASE WHEN xmax = '0'::xid THEN true ELSE currtid2('tasks', ctid) = ctid END
		ORDER BY priority, run_at, id
		LIMIT g.n
		FOR UPDATE OF tasks SKIP LOCKED
	) f
	WHERE g.n > 0
),
-- what each tenant got of its quota: how many, and its last task
ends AS (
	SELECT coalesce(jsonb_object_agg(tenant, jsonb_build_object('n', n, 'p', priority, 'r', run_at, 'i', id)), '{}') AS m
	FROM (
		SELECT DISTINCT ON (tenant) tenant, priority, run_at, id, count(*) OVER (PARTITION BY tenant) AS n
		FROM fair
		ORDER BY tenant, priority DESC, run_at DESC, id DESC
	) l
),
after AS (
	SELECT tenant, ord,
		CASE WHEN room IS NULL THEN $3 ELSE greatest(room - coalesce((e ->> 'n')::int, 0), 0) END AS n,
		coalesce((e ->> 'p')::smallint, -32768) AS p,
		coalesce((e ->> 'r')::timestamptz, '-infinity') AS r,
		coalesce((e ->> 'i')::bigint, 0) AS i
	FROM (SELECT tenant, ord, room, (SELECT m FROM ends) -> tenant AS e FROM give OFFSET 0) g
),
fill AS (
	SELECT f.id, f.priority, f.run_at
	FROM (SELECT * FROM after ORDER BY ord) g
	CROSS JOIN LATERAL (
		SELECT id, priority, run_at FROM tasks
		WHERE queue = $1 AND tenant = g.tenant AND (priority, run_at, id) > (g.p, g.r, g.i) AND state IN ('queued', 'retrying', 'compensating') AND run_at <= coalesce($5::timestamptz, now())
			AND (coalesce(cardinality($6::text[]), 0) = 0 OR kind = ANY ($6::text[]))
			AND (needs IS NULL OR $7::text[] IS NULL OR needs <@ $7::text[]) AND CASE WHEN xmax = '0'::xid THEN true ELSE currtid2('tasks', ctid) = ctid END
		ORDER BY priority, run_at, id
		LIMIT g.n
		FOR UPDATE OF tasks SKIP LOCKED
	) f
	LIMIT $3 - (SELECT count(*) FROM fair)
),
-- one tenant with due tasks and no cap (the common case): its tasks,
-- without the shares, quotas and refill, which are then never run
alone AS (
	SELECT count(*) <= 1 AND NOT EXISTS (
		SELECT FROM tenant_shares s WHERE s.max_running IS NOT NULL
			AND s.tenant = (SELECT tenant FROM heads LIMIT 1)) AS yes
	FROM (SELECT FROM heads LIMIT 2) h
),
single AS (
	SELECT id, priority, run_at FROM tasks
	WHERE queue = $1 AND tenant = (SELECT tenant FROM heads LIMIT 1) AND state IN ('queued', 'retrying', 'compensating') AND run_at <= coalesce($5::timestamptz, now())
			AND (coalesce(cardinality($6::text[]), 0) = 0 OR kind = ANY ($6::text[]))
			AND (needs IS NULL OR $7::text[] IS NULL OR needs <@ $7::text[]) AND CASE WHEN xmax = '0'::xid THEN true ELSE currtid2('tasks', ctid) = ctid END
	ORDER BY priority, run_at, id
	LIMIT $3
	FOR UPDATE OF tasks SKIP LOCKED
),
-- a crowd: first the newcomer lane, the oldest tasks of tenants that had
-- nothing runnable when they came, one a tenant, up to $10 (capped
-- tenants wait for their turn, whose room is counted under a lock), then
-- each tenant's turn
lane_heads AS (
	SELECT DISTINCT ON (tenant) id, run_at FROM (
		SELECT id, tenant, run_at FROM tasks
		WHERE queue = $1 AND newcomer AND state = 'queued' AND state IN ('queued', 'retrying', 'compensating') AND run_at <= coalesce($5::timestamptz, now())
			AND (coalesce(cardinality($6::text[]), 0) = 0 OR kind = ANY ($6::text[]))
			AND (needs IS NULL OR $7::text[] IS NULL OR needs <@ $7::text[])
			AND NOT EXISTS (SELECT FROM tenant_shares s WHERE s.tenant = tasks.tenant AND s.max_running IS NOT NULL)
			AND $10::int > 0 AND NOT (SELECT yes FROM alone) AND (SELECT yes FROM crowd)
		ORDER BY run_at, id
		LIMIT 4 * $10
	) c
	ORDER BY tenant, run_at, id
),
lane AS (
	SELECT id, ctid, priority, run_at FROM tasks
	WHERE id = ANY (ARRAY(SELECT id FROM lane_heads ORDER BY run_at, id LIMIT $10)) AND state IN ('queued', 'retrying', 'compensating') AND run_at <= coalesce($5::timestamptz, now())
			AND (coalesce(cardinality($6::text[]), 0) = 0 OR kind = ANY ($6::text[]))
			AND (needs IS NULL OR $7::text[] IS NULL OR needs <@ $7::text[]) AND CASE WHEN xmax = '0'::xid THEN true ELSE currtid2('tasks', ctid) = ctid END
	FOR UPDATE OF tasks SKIP LOCKED
),
lane_ids AS (
	SELECT coalesce(array_agg(id), '{}') AS ids FROM lane
),
-- each tenant's turn, in rotation order, until the batch is full
turns AS (
	SELECT tenant, room, CASE WHEN tenant = $8::text THEN greatest(n - $9::int, 0) ELSE n END AS n
	FROM (
	SELECT tenant, room, least(ceil(greatest($3, 64) * weight::float8 / greatest(ceil($3 / 4.0)::int, 64))::int, room) AS n
	FROM (
		SELECT r.tenant, coalesce(s.weight, 1) AS weight,
			CASE WHEN s.max_running IS NOT NULL THEN agentledger_tenant_turn(r.tenant) END AS room
		FROM ring r
		LEFT JOIN LATERAL (SELECT weight, max_running FROM tenant_shares s WHERE s.tenant = r.tenant) s ON true
		OFFSET 0
	) r
	) r
),
-- the lane's tasks, then the turns' until the batch is full (one LIMIT
-- of $3: a limit the planner cannot fold, such as $3 less the lane's
-- count, made the custom plans look cheaper than the generic one, and
-- every claim was planned afresh; TestACrowdClaimKeepsItsGenericPlan)
turn AS (
	SELECT id, priority, run_at FROM lane
	UNION ALL
	(
	SELECT f.id, f.priority, f.run_at
	FROM turns g
	CROSS JOIN LATERAL (
		SELECT id, priority, run_at FROM tasks
		WHERE queue = $1 AND tenant = g.tenant AND id <> ALL ((SELECT ids FROM lane_ids)::bigint[]) AND state IN ('queued', 'retrying', 'compensating') AND run_at <= coalesce($5::timestamptz, now())
			AND (coalesce(cardinality($6::text[]), 0) = 0 OR kind = ANY ($6::text[]))
			AND (needs IS NULL OR $7::text[] IS NULL OR needs <@ $7::text[]) AND CASE WHEN xmax = '0'::xid THEN true ELSE currtid2('tasks', ctid) = ctid END
		ORDER BY priority, run_at, id
		LIMIT g.n
		FOR UPDATE OF tasks SKIP LOCKED
	) f
	WHERE g.n > 0
	)
	LIMIT $3
),
-- what the turns left of the batch, from the same tenants past their turn
-- (a row skipped as locked can put one task in both: due drops it)
more AS (
	SELECT f.id, f.priority, f.run_at
	FROM turns g
	CROSS JOIN LATERAL (
		SELECT id, priority, run_at FROM tasks
		WHERE queue = $1 AND tenant = g.tenant AND id <> ALL ((SELECT ids FROM lane_ids)::bigint[]) AND state IN ('queued', 'retrying', 'compensating') AND run_at <= coalesce($5::timestamptz, now())
			AND (coalesce(cardinality($6::text[]), 0) = 0 OR kind = ANY ($6::text[]))
			AND (needs IS NULL OR $7::text[] IS NULL OR needs <@ $7::text[]) AND CASE WHEN xmax = '0'::xid THEN true ELSE currtid2('tasks', ctid) = ctid END
		ORDER BY priority, run_at, id
		OFFSET g.n
		LIMIT CASE WHEN g.room IS NULL THEN $3 ELSE greatest(g.room - g.n, 0) END
		FOR UPDATE OF tasks SKIP LOCKED
	) f
	LIMIT $3 - (SELECT count(*) FROM turn)
),
due AS (
	SELECT id, priority, run_at AS since FROM single WHERE (SELECT yes FROM alone)
	UNION ALL
	SELECT id, priority, run_at FROM fair WHERE NOT (SELECT yes FROM alone) AND NOT (SELECT yes FROM crowd)
	UNION ALL
	SELECT id, priority, run_at FROM fill WHERE NOT (SELECT yes FROM alone) AND NOT (SELECT yes FROM crowd)
	UNION ALL
	SELECT DISTINCT id, priority, run_at FROM (
		SELECT id, priority, run_at FROM turn
		UNION ALL
		SELECT id, priority, run_at FROM more
	) c WHERE (SELECT yes FROM crowd)
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
WHERE t.id = ANY (ARRAY(SELECT id FROM due))
RETURNING t.id, t.tenant, t.queue, t.kind, t.payload, t.priority, t.run_at, t.state, t.attempt, t.max_attempts, t.generation, t.lease_owner, t.lease_token, t.lease_expires_at, t.cancel_requested_at, t.result, t.last_error, t.submission_key, t.created_at, t.updated_at, t.finished_at, t.wait_reason, t.compensation, t.traceparent, t.replay_traceparent, t.generation_claims, t.needs, t.id = ANY ((SELECT ids FROM lane_ids)::bigint[])
