package claims

import (
	"strconv"
	"strings"

	"github.com/agentledger/agentledger/internal/syncwait"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/notify/outbox"
)

// All SQL of the tasks and task_attempts tables lives here. $now is always
// coalesce($n::timestamptz, now()) so tests can pin the clock.

const taskColumns = `id, tenant, queue, kind, payload, priority, run_at, state,
	attempt, max_attempts, generation, lease_owner, lease_token, lease_expires_at,
	cancel_requested_at, result, last_error, submission_key, created_at,
	updated_at, finished_at, wait_reason, compensation, traceparent, replay_traceparent,
	generation_claims, needs`

// enqueueSQL inserts a batch of one tenant's tasks in one queue ($13,
// $14); rows whose (tenant, submission_key) exists are skipped by the
// unique index (I6) and looked up by lookupKeysSQL. It wakes the workers
// of each queue that got a due task (one NOTIFY per queue, delivered at
// commit). Rows come back in input order: identities are drawn in
// insertion order, which follows the input's. The batch's first due task
// is marked newcomer when its tenant is one (newcomerIn), asked once, in
// an InitPlan: probes per row would make the generic plan, which expects
// ten rows of unnest, look dearer than a custom plan of one, and
// PostgreSQL would plan the statement afresh at every call (0.4 ms).
var enqueueSQL = `/* claims.enqueue */
WITH arrival AS (
	SELECT ` + newcomerIn("$13::text", "$14::text") + ` AS yes
),
` + enqueueInsert(`(SELECT yes FROM arrival)`) + `,
` + enqueueTail

// enqueueManySQL is enqueueSQL for a batch of several tenants or queues:
// the first due task of each tenant in each queue is marked when its
// tenant is a newcomer, asked per row. Such batches are planned afresh;
// they are few, and large.
var enqueueManySQL = `/* claims.enqueueMany */
WITH ` + enqueueInsert(newcomerIn("u.queue", "u.tenant")) + `,
` + enqueueTail

// enqueueInsert is the enqueue's insert (CTE ins), marking newcomers by
// the condition arrives.
func enqueueInsert(arrives string) string {
	return insertTasks("", `CASE WHEN u.due AND u.first AND `+arrives+` THEN true END`, "", enqueueSource+` u`)
}

// insertTasks is an enqueue's insert (CTE ins) of the rows of from (u,
// enqueueSource's columns): newcomer is the value of that column; cols
// and vals, when not empty, name more columns and give their values.
func insertTasks(cols, newcomer, vals, from string) string {
	return `ins AS (
	INSERT INTO tasks (tenant, queue, kind, payload, priority, run_at, max_attempts,
		submission_key, request_hash, traceparent, needs, newcomer` + cols + `)
	SELECT u.tenant, u.queue, u.kind, u.payload, u.priority,
		coalesce(u.run_at, coalesce($10::timestamptz, now())), u.max_attempts,
		u.submission_key, u.request_hash, $11::text, string_to_array(nullif(u.needs, ''), E'\n'),
		` + newcomer + vals + `
	FROM ` + from + `
	` + enqueueConflict
}

// enqueueSource is the rows an enqueue inserts: its arrays' elements,
// each with whether it is due now (due) and whether it is the first of
// its queue, tenant and dueness (first), and its place (ord).
const enqueueSource = `(
		SELECT *, row_number() OVER (PARTITION BY queue, tenant, due ORDER BY ord) = 1 AS first
		FROM (SELECT *, coalesce(run_at <= coalesce($10::timestamptz, now()), true) AS due FROM unnest($1::text[], $2::text[], $3::text[], $4::jsonb[], $5::smallint[],
			$6::timestamptz[], $7::int[], $8::text[], $9::bytea[], $12::text[])
			WITH ORDINALITY AS u(tenant, queue, kind, payload, priority, run_at,
			max_attempts, submission_key, request_hash, needs, ord)) u
	)`

// enqueueConflict ends an enqueue's insert: in input order, skipping a
// keyed submission that exists (I6), returning the rows inserted.
const enqueueConflict = `ORDER BY u.ord
	ON CONFLICT (tenant, submission_key) WHERE submission_key IS NOT NULL DO NOTHING
	RETURNING ` + taskColumns + `
)`

const enqueueTail = `wake AS (
	SELECT pg_notify('agentledger_task_insert', q)
	FROM (SELECT DISTINCT queue AS q FROM ins WHERE run_at <= coalesce($10::timestamptz, now())) s
)
SELECT ins.* FROM ins WHERE ` + woken + `
ORDER BY ins.id`

// enqueueStartSQL is enqueueSQL for one task that a worker of this process
// has a free slot for (Store.EnqueueStart): a task due now is inserted
// running, leased to $15 until now + $16, as a claim would lease it
// (claimSet: attempt 1, the token the claim's clock in µs, capped false
// as the statement proved), and wakes no worker — when nothing in its
// queue is ahead of it for that pool, which would take the task $17
// (its kinds; empty: any) and $18 (its capabilities; NULL: any) name:
// no runnable task it could claim is due (a retry whose backoff ended, a
// task scheduled for now: due without a notification, and only a claim
// orders them against a newcomer), no lease has expired, and the tenant
// has no cap (a cap's room is counted by claims alone). Tasks due later,
// and those the pool could not run, are no reason to queue it. The look
// is bounded: a queue with more than 64 runnable tasks is taken to have
// one due. Any other task is queued as enqueueSQL queues it, its newcomer
// probes asked only then (arrival, read in the branch that queues). A
// keyed submission that exists already inserts nothing, as there.
var enqueueStartSQL = `/* claims.enqueueStart */
WITH probe AS MATERIALIZED (
	SELECT EXISTS (SELECT FROM tasks t WHERE t.queue = $13::text AND t.state = 'running'
			AND t.lease_expires_at <= coalesce($10::timestamptz, now())) AS expired,
		EXISTS (SELECT FROM tenant_shares s WHERE s.tenant = $14::text AND s.max_running IS NOT NULL) AS capped,
		count(*) > ` + strconv.Itoa(startLookAhead) + ` OR coalesce(bool_or(r.run_at <= coalesce($10::timestamptz, now())
			AND (coalesce(cardinality($17::text[]), 0) = 0 OR r.kind = ANY ($17::text[]))
			AND (r.needs IS NULL OR $18::text[] IS NULL OR r.needs <@ $18::text[])), false) AS ahead
	FROM (SELECT t.run_at, t.kind, t.needs FROM tasks t WHERE t.queue = $13::text AND ` + runnable + `
		LIMIT ` + strconv.Itoa(startLookAhead+1) + `) r
),
arrival AS (
	SELECT ` + newcomerIn("$13::text", "$14::text") + ` AS yes
),
alone AS (
	SELECT NOT (expired OR capped OR ahead) AS yes FROM probe
),
start AS (
	SELECT coalesce($10::timestamptz, now()) AS t,
		(extract(epoch FROM coalesce($10::timestamptz, now())) * 1000000)::bigint AS token_floor
),
` + insertTasks(`,
		state, attempt, generation_claims, lease_owner, lease_token, lease_expires_at, attempted_at, capped`,
	`CASE WHEN u.started THEN NULL WHEN u.due AND u.first AND (SELECT yes FROM arrival) THEN true END`, `,
		CASE WHEN u.started THEN 'running' ELSE 'queued' END,
		CASE WHEN u.started THEN 1 ELSE 0 END,
		CASE WHEN u.started THEN 1 ELSE 0 END,
		CASE WHEN u.started THEN $15::text END,
		CASE WHEN u.started THEN (SELECT token_floor FROM start) ELSE 0 END,
		CASE WHEN u.started THEN (SELECT t FROM start) + $16::interval END,
		CASE WHEN u.started THEN (SELECT t FROM start) END,
		CASE WHEN u.started THEN false END`,
	`(SELECT *, due AND (SELECT yes FROM alone) AS started FROM `+enqueueSource+` s) u`) + `,
wake AS (
	SELECT pg_notify('agentledger_task_insert', q)
	FROM (SELECT DISTINCT queue AS q FROM ins WHERE state = 'queued' AND run_at <= coalesce($10::timestamptz, now())) s
)
SELECT ins.* FROM ins WHERE ` + woken + `
ORDER BY ins.id`

// startLookAhead is how many runnable tasks of its queue a started
// enqueue reads for one due before it (enqueueStartSQL).
const startLookAhead = 64

// newcomerIn is the condition that a task of tenant enqueued now in queue
// comes as a newcomer: another tenant has something runnable there, the
// tenant has nothing, and it is not capped (a crowd claim leaves capped
// tenants to their turn). Each is a descent of tasks_runnable_tenant_idx
// (or of tenant_shares' key) bounded by its index condition: "runnable"
// rather than "due" keeps them so, where a tenant's scheduled tasks would
// otherwise be read past one by one. Others first: a tenant alone in its
// queue, the common case, costs two descents and is never marked, so its
// tasks add no entry to tasks_newcomer_idx.
func newcomerIn(queue, tenant string) string {
	return `((EXISTS (SELECT FROM tasks t WHERE t.queue = ` + queue + ` AND t.tenant < ` + tenant + ` AND ` + runnable + `)
		OR EXISTS (SELECT FROM tasks t WHERE t.queue = ` + queue + ` AND t.tenant > ` + tenant + ` AND ` + runnable + `))
		AND NOT EXISTS (SELECT FROM tasks t WHERE t.queue = ` + queue + ` AND t.tenant = ` + tenant + ` AND ` + runnable + `)
		AND NOT EXISTS (SELECT FROM tenant_shares s WHERE s.tenant = ` + tenant + ` AND s.max_running IS NOT NULL))`
}

// runnable is the condition that task t is queued, retrying or
// compensating: in tasks_runnable_tenant_idx.
const runnable = `t.state IN ('queued', 'retrying', 'compensating')`

// woken makes a statement send the notifications of its CTE wake: a
// condition evaluated once, before any row. (A LEFT JOIN to the count,
// whose columns nothing reads, is a join the planner removes, and the
// notifications with it.)
const woken = `(SELECT count(*) FROM wake) >= 0`

// lookupKeysSQL reads the tasks of the (tenant, submission key) pairs
// $1, $2, with their request hashes: the submissions an enqueue found
// made before (resolveDuplicates).
//
// It acknowledges what it read (syncwait.Durable): a task found may have
// been committed on the primary only, its submitter retrying under its
// key.
const lookupKeysSQL = `/* claims.lookupKeys */
SELECT ` + taskColumns + `, request_hash
FROM tasks t
JOIN unnest($1::text[], $2::text[]) AS k(tenant, submission_key)
	USING (tenant, submission_key)
WHERE ` + syncwait.Durable

// claimNow is the claim's clock, and the least fencing token it issues:
// that clock in microseconds since the epoch (claimSet).
const claimNow = `now AS (SELECT coalesce($5::timestamptz, now()) AS t,
	(extract(epoch FROM coalesce($5::timestamptz, now())) * 1000000)::bigint AS token_floor)`

// asyncCommit is the value NULL, and makes the claim's transaction commit
// asynchronously on a server without synchronous standbys:
// set_config(…, true) holds for that transaction only, and its commit then
// returns without waiting for its WAL flush — a third of the way from
// enqueue to start at 500 tasks/s (BENCHMARKS.md). As a scalar subquery it
// runs once (an InitPlan) and leaves the plan alone; in the claim's clock
// CTE it kept that CTE from being inlined and the plan tests refused what
// followed. The due-only claims (claimedDue) use it; the full claim, which
// also buries expired leases, commits as any other statement.
//
// A claim lost to a crash before its flush is safe: the task is runnable
// again, and the lost claim's token is never issued again (claimSet), so
// whatever its worker still writes is fenced off. Any later synchronous
// commit on the server — a heartbeat, the ledger's reservation before an
// unsafe effect, a finish, anyone's enqueue — flushes the WAL the claim
// wrote before it, so nothing durable is built on a lost claim; a keyed
// effect performed under it is absorbed by its key when the task runs
// again, as after any crash between an effect and its record.
//
// With synchronous standbys (synchronous_standby_names set) the claim
// commits as the session says, waiting for a standby: there a task's
// insert can be seen before any standby has it — its commit's wait for the
// standby was cut short (a primary's shutdown at a switchover ends its
// backends so) and its submitter told of an error. A claim that did not
// wait could run it, a failover then lose it, and the submitter's retry
// on the new primary make another task, whose effects have other keys:
// each keyed effect would go out twice (TestAClaimWaitsForTheStandbyToHaveItsTask).
// Waiting for its own commit to reach a standby, the claim waits for
// every commit before it, the task's insert among them; a claim whose
// wait is cut short, or outlasts its context, returns an error and
// starts nothing.
const asyncCommit = `(SELECT NULL::text FROM set_config('synchronous_commit',
	CASE current_setting('synchronous_standby_names') WHEN '' THEN 'off' ELSE current_setting('synchronous_commit') END, true))`

// qualified prefixes each of the comma-separated columns with table.
func qualified(table, columns string) string {
	cols := strings.Split(columns, ",")
	for i, c := range cols {
		cols[i] = table + "." + strings.TrimSpace(c)
	}
	return strings.Join(cols, ", ")
}

// claimSet is the claim's update of a task: leased to $2 with a new fencing
// token until now + $4. The token grows with every claim of the task and is
// at least the claim's clock in microseconds: a claim whose commit was lost
// (asyncCommit) is followed by one at a later clock, so its token is never
// issued again — unless the server that claims next reads, to the
// microsecond, the clock the lost claim read (on the same server after a
// restart that would need the clock to step back; after a failover, a skew
// equal to the failover's duration).
const claimSet = `UPDATE tasks t SET
	state = 'running',
	attempt = t.attempt + 1,
	generation_claims = t.generation_claims + 1,
	lease_owner = $2,
	lease_token = greatest(t.lease_token + 1, now.token_floor),
	lease_expires_at = now.t + $4::interval,
	attempted_at = now.t,
	updated_at = now.t,
	newcomer = NULL`

// cappedNow is what a claim records in capped for each task it leases:
// whether the task's tenant has a cap, as the claim's snapshot sees the
// share rows. A cap's count reads only the running tasks not marked
// uncapped (tasks_capped_running_idx, migration 00048), so a claim of an
// uncapped tenant's task adds no entry to that index. While no tenant has
// a cap (one probe of tenant_shares_capped_idx, once a statement) no task
// is looked up.
const cappedNow = `CASE WHEN EXISTS (SELECT FROM tenant_shares WHERE max_running IS NOT NULL)
		THEN EXISTS (SELECT FROM tenant_shares s WHERE s.tenant = t.tenant AND s.max_running IS NOT NULL)
		ELSE false END`

// leaseRows is the claim's update of the tasks whose key (id, or ctid)
// the CTE src holds, taken as an array so that the plan stays a look-up
// whatever src is (the full claim's picked, a union of two locked reads,
// drew a nested loop rescanning it when joined). waitReason is the value
// wait_reason gets.
//
// A src that locked its rows itself passes their ctid: the update then
// finds each row where the lock found it (a TID scan), without a descent
// of tasks_pkey per row — a tenth of a claim of 1,000. The lock holds the
// version in place until the claim commits. A row whose lock followed an
// update made after the statement's snapshot is locked in a version the
// snapshot cannot see: the update passes over it, and it stays queued.
// capped is the value capped gets (cappedNow, or false where the statement
// proved the tenant uncapped).
func leaseRows(src, key, waitReason, capped string) string {
	return claimSet + `,
	wait_reason = ` + waitReason + `,
	capped = ` + capped + `
FROM now
WHERE t.` + key + ` = ANY (ARRAY(SELECT ` + key + ` FROM ` + src + `))`
}

// claimedFrom leases the tasks of the CTE src (by key, as leaseRows) and
// returns them in claim order, each with lane: whether the lane took it
// (inLane("id"), or false for a statement without one).
func claimedFrom(src, key, lane string) string {
	return `claimed AS (
` + leaseRows(src, key, "NULL", cappedNow) + `
RETURNING t.*
)
SELECT ` + taskColumns + `, ` + lane + ` FROM claimed ORDER BY priority, run_at, id`
}

// claimedDue is claimedFrom for the due-only claims: the same update, but
// it returns the tasks in no order
// (Claim sorts them) and commits asynchronously. The outer sort cost up
// to ~100 µs more server CPU a claim (BenchmarkClaimServerCPU), and these
// claims are the ones a busy queue makes. A join of src instead of the
// array let the planner feed a merge join from the primary key read end to
// end: with a million finished tasks, 0.5 s a claim (the plan tests now
// refuse an index read without a condition). key is leaseRows'; lane is
// whether the lane took a task (inLane, or false for a statement without
// one); capped is leaseRows'.
func claimedDue(src, key, lane, capped string) string {
	return leaseRows(src, key, asyncCommit, capped) + `
RETURNING ` + qualified("t", taskColumns) + `, ` + lane
}

// dueNow is the condition on a task of queue $1 that a claim may take
// now: queued or retrying, due by the claim's clock, of the kinds $6
// (any kind when $6 is empty or NULL), and needing only what the claiming
// pool has (` + "`canRun`" + `). Each read of it goes through
// tasks_runnable_tenant_idx, whose (queue, tenant) prefix it narrows to
// one tenant's tasks.
const dueNow = `state IN ('queued', 'retrying', 'compensating') AND run_at <= coalesce($5::timestamptz, now())
			AND (coalesce(cardinality($6::text[]), 0) = 0 OR kind = ANY ($6::text[]))
			AND ` + canRun

// canRun is the condition that the claiming pool has what a task needs:
// the task needs nothing beyond its kind (needs NULL, most tasks), or the
// pool's capabilities $7 contain its needs; a claim without capabilities
// ($7 NULL: a caller that runs anything, as the benchmarks) takes any.
// A task no pool can run is passed over by every claim and stays queued.
const canRun = `(needs IS NULL OR $7::text[] IS NULL OR needs <@ $7::text[])`

// settled is the condition that the row as this statement sees it is
// still the row's latest version: no transaction has locked or updated it
// (xmax 0), or its latest version, as a fresh snapshot sees it, is this
// one (currtid2 follows the row's update chain). A claim locks settled
// rows only. A row another daemon's claim leased after this statement's
// snapshot is not settled: locking it (SKIP LOCKED does not skip a row
// whose updater has committed) would lock its new, leased version,
// recheck it and pass it over, but hold the lock until this claim
// commits, and that daemon's completion of the task would wait for it.
// With ten daemons over 10,000 tenants that wait was most of their lock
// waits, and they claimed at a third of one daemon's rate (BENCHMARKS.md).
// A row whose xmax is only a lock (a claim that rolled back, the
// key-share lock of a ledger record on a running task whose lease then
// expired) is settled: xmax 0 alone would pass it over until it was
// written again. The chain is followed only for rows with an xmax; the
// test is a CASE, which the planner estimates at a half, where the same
// test as an OR of two equalities was estimated at a hundredth and moved
// every cost around it (TestARunClaimKeepsItsGenericPlan).
const settled = `CASE WHEN ` + untouched + ` THEN true ELSE ` + latestVersion + ` END`

// untouched: no transaction has updated or locked the row since it was
// written; latestVersion: the row as the statement sees it is its latest.
const (
	untouched     = `xmax = '0'::xid`
	latestVersion = `currtid2('tasks', ctid) = ctid`
)

// crowdAt is how many tenants with due tasks make a crowd for a claim of
// $3 tasks: a quarter of the batch, and at least 64. Below it a claim
// weighs every tenant with due tasks (claimDue's heads); from it on, a
// claim reads only as many tenants as it serves. crowdSize is the same in
// Go.
const crowdAt = `greatest(ceil($3 / 4.0)::int, 64)`

// eachTenant reads and locks, for each tenant of src (a row source
// aliased g), its due tasks most urgent first: those that pass after (a
// condition ending in AND, or ""), past offset of them ("" for none), at
// most limit. The per-tenant read keeps the tenant in the index condition
// of tasks_runnable_tenant_idx (TestClaimPlanReadsTheClaimIndexes).
func eachTenant(src, cols, after, offset, limit string) string {
	skip := ""
	if offset != "" {
		skip = "\n\t\tOFFSET " + offset
	}
	fcols := strings.ReplaceAll(cols, "f.", "")
	return `	SELECT ` + cols + `
	FROM ` + src + `
	CROSS JOIN LATERAL (
		SELECT ` + fcols + ` FROM tasks
		WHERE queue = $1 AND tenant = g.tenant AND ` + after + dueNow + ` AND ` + settled + `
		ORDER BY priority, run_at, id` + skip + `
		LIMIT ` + limit + `
		FOR UPDATE OF tasks SKIP LOCKED
	) f`
}

// claimDue locks up to $3 due tasks of queue $1 (CTE due: id, priority,
// since), shared fairly between the tenants that have due tasks:
//
//   - ring: the tenants with due tasks (of the kinds) in the queue and the
//     priority of each one's most urgent task, by a loose index scan: one
//     descent of tasks_runnable_tenant_idx per tenant, to the first due
//     task of the next tenant by name. It starts at $8, the last tenant
//     the pool's previous claim served (ClaimHint), and wraps around, and
//     it is read lazily: a claim descends only as far as it reads;
//   - crowd: whether crowdAt tenants or more have due tasks. Below that
//     (heads: all of them), the claim weighs them all, as follows; from it
//     on, it takes turns instead (turns, below);
//   - shares: their weights (1 without a tenant_shares row) and caps;
//   - room: for the capped ones, how many more tasks each may lease,
//     counted under their share rows' locks by agentledger_tenant_room
//     (only when a capped tenant has due tasks; the locks are held until
//     the claim commits, so claims of a capped tenant take turns);
//   - give: each tenant with room gets ceil($3·w/Σw) of the batch, at
//     most its room; when that is more than the batch (more tenants than
//     tasks, or rounding), the tenants whose heads are the most urgent come
//     first, then those with the fewest running tasks in the queue for
//     their weight (busy: one read of the queue's leases, only then), and
//     ties go by a lottery weighted by w (a draw of -ln(u)/w), so that
//     over rounds each tenant gets its share;
//   - fair: each tenant's quota, its most urgent tasks first, locked in a
//     LATERAL look-up per tenant (SKIP LOCKED);
//   - fill: what the quotas left of the batch (a tenant had fewer due
//     tasks than its quota), from the tenants in the same order, each from
//     after the last task it got (ends, after) and up to its remaining
//     room. The outer LIMIT stops pulling rows once the batch is full, so
//     no more rows are locked than are claimed.
//
// A crowd of tenants takes turns in rotation order (turns, turn): each gets
// a turn of ceil(max($3, 64)·w/crowdAt) tasks — w for a claim of up to 256,
// 4w for one of 1,000 — at most its room, until the batch is full; the
// tenant at the cursor gets what its turn still owes ($9, what the loop's
// last claims gave it), so that a weight counts for claims of one task too; what is left comes from the same tenants
// past their turns (more). A capped tenant's room is counted when the
// rotation reaches it, under its share row's lock, or is 0 while another
// claim holds that lock (agentledger_tenant_turn): crowd claims never wait
// on each other. Reading every tenant for every claim cost a
// descent per tenant: 43 ms a claim with 10,000 tenants (BENCHMARKS.md). A
// turn reads the tenants it serves, and the pool's next claim starts after
// the last one (ClaimHint), so each tenant with due tasks is served within
// ⌈tenants/crowdAt⌉ claims, whatever its priority or load: priority orders
// a tenant's own tasks, and the tenants of a claim only below crowdAt.
//
// With one tenant and no cap (alone) none of that runs: single reads its
// tasks as the claim did before fair share, after the two descents of the
// loose scan that found it alone; the shares, quotas, ends and refill
// cost a claim of one or two tasks a third more PostgreSQL time (0.30
// against 0.22 ms at 500 tasks/s, BENCHMARKS.md). The OFFSET 0s
// keep the planner from flattening a subquery whose column is read several
// times: flattened, each read became an InitPlan of its own, and the
// claim of one task took half as long again.
var claimDue = `walk AS (
	(SELECT tenant, priority FROM tasks
	WHERE queue = $1 AND tenant >= $8::text AND ` + dueNow + `
	ORDER BY tenant, priority, run_at, id
	LIMIT 1)
	UNION ALL
	SELECT n.tenant, n.priority
	FROM walk h
	CROSS JOIN LATERAL (
		SELECT tenant, priority FROM tasks
		WHERE queue = $1 AND tenant > h.tenant AND ` + dueNow + `
		ORDER BY tenant, priority, run_at, id
		LIMIT 1
	) n
),
wrap AS (
	(SELECT tenant, priority FROM tasks
	WHERE queue = $1 AND tenant < $8::text AND ` + dueNow + `
	ORDER BY tenant, priority, run_at, id
	LIMIT 1)
	UNION ALL
	SELECT n.tenant, n.priority
	FROM wrap h
	CROSS JOIN LATERAL (
		SELECT tenant, priority FROM tasks
		WHERE queue = $1 AND tenant > h.tenant AND tenant < $8::text AND ` + dueNow + `
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
	SELECT count(*) >= ` + crowdAt + ` AS yes FROM (SELECT FROM ring LIMIT ` + crowdAt + `) r
),
heads AS (
	SELECT tenant, priority FROM ring LIMIT ` + crowdAt + `
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
` + eachTenant("give g", "f.id, f.tenant, f.priority, f.run_at", "", "", "g.n") + `
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
` + eachTenant("(SELECT * FROM after ORDER BY ord) g", "f.id, f.priority, f.run_at", "(priority, run_at, id) > (g.p, g.r, g.i) AND ", "", "g.n") + `
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
	WHERE queue = $1 AND tenant = (SELECT tenant FROM heads LIMIT 1) AND ` + dueNow + ` AND ` + settled + `
	ORDER BY priority, run_at, id
	LIMIT $3
	FOR UPDATE OF tasks SKIP LOCKED
),
-- a crowd: first the newcomer lane, the oldest tasks of tenants that had
-- nothing runnable when they came, one a tenant, up to $10 (capped
-- tenants wait for their turn, whose room is counted under a lock), then
-- each tenant's turn
` + newcomerLane(`NOT (SELECT yes FROM alone) AND (SELECT yes FROM crowd)`, `$10`) + `,
-- each tenant's turn, in rotation order, until the batch is full
turns AS (
	SELECT tenant, room, CASE WHEN tenant = $8::text THEN greatest(n - $9::int, 0) ELSE n END AS n
	FROM (
	SELECT tenant, room, least(ceil(greatest($3, 64) * weight::float8 / ` + crowdAt + `)::int, room) AS n
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
` + eachTenant("turns g", "f.id, f.priority, f.run_at", notInLane, "", "g.n") + `
	WHERE g.n > 0
	)
	LIMIT $3
),
-- what the turns left of the batch, from the same tenants past their turn
-- (a row skipped as locked can put one task in both: due drops it)
more AS (
` + eachTenant("turns g", "f.id, f.priority, f.run_at", notInLane, "g.n", "CASE WHEN g.room IS NULL THEN $3 ELSE greatest(g.room - g.n, 0) END") + `
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
)`

// newcomerLane is a crowd claim's newcomer lane (CTEs lane_heads, lane,
// lane_ids): the oldest due tasks of tenants that had nothing runnable
// when they came, one a tenant, up to size ($10), locked; only when gate
// holds.
// Capped tenants wait for their turn, whose room is counted under a lock.
func newcomerLane(gate, size string) string {
	return `lane_heads AS (
	SELECT DISTINCT ON (tenant) id, run_at FROM (
		SELECT id, tenant, run_at FROM tasks
		WHERE queue = $1 AND newcomer AND state = 'queued' AND ` + dueNow + `
			AND NOT EXISTS (SELECT FROM tenant_shares s WHERE s.tenant = tasks.tenant AND s.max_running IS NOT NULL)
			AND ` + size + `::int > 0 AND ` + gate + `
		ORDER BY run_at, id
		LIMIT 4 * ` + size + `
	) c
	ORDER BY tenant, run_at, id
),
lane AS (
	SELECT id, ctid, priority, run_at FROM tasks
	WHERE id = ANY (ARRAY(SELECT id FROM lane_heads ORDER BY run_at, id LIMIT ` + size + `)) AND ` + dueNow + ` AND ` + settled + `
	FOR UPDATE OF tasks SKIP LOCKED
),
lane_ids AS (
	SELECT coalesce(array_agg(id), '{}') AS ids FROM lane
)`
}

// notInLane keeps a crowd claim's turns from reading again the tasks its
// lane took: a transaction's own row locks are not skipped, and a task
// read twice would leave its batch one short.
const notInLane = `id <> ALL ((SELECT ids FROM lane_ids)::bigint[]) AND `

// inLane is, in a claim's answer, whether the claim took the task whose
// id is col through its newcomer lane: the loop's rotation cursor leaves
// those out (ClaimHint.served).
func inLane(col string) string { return col + ` = ANY ((SELECT ids FROM lane_ids)::bigint[])` }

// claimAloneSQL is claimDueSQL's one-tenant branch (alone, single) as a
// statement of its own: the due tasks of tenant $8, the tenant the loop's
// last claims found alone, when no other tenant has due tasks and $8 has
// no cap; nothing otherwise. Its claims are those claimDueSQL makes in
// that case, but PostgreSQL no longer sets up the shares, quotas and
// refill for every call: that start-up was a third of the claiming
// backend's CPU at 500 tasks/s (BENCHMARKS.md). An empty answer says
// nothing about other tenants: the caller claims in full then.
//
// The tenant's tasks are read from just past ($9, $10, $11), the
// (priority, run_at, id) of the last task the loop claimed (ClaimHint.mark;
// the least values when it has none). A burn-down's claimed tasks leave
// their entries in tasks_runnable_tenant_idx until a vacuum, and a claim
// read from the tenant's first entry stepped over all of them, twice (to
// find the tenant, then its tasks): late in a burn-down of 50,000 tasks,
// 390 pages a claim. The probes for other tenants start at $8's bounds;
// the one below it reads backwards, away from $8's entries. They are
// ordered reads of one row, not NOT EXISTS: through PgBouncer, whose
// sessions plan with sequential scans on, the planner took NOT EXISTS for
// a scan of the whole table that would stop at its first row.
//
// A claim past a mark ($12) takes only rows no transaction has updated or
// locked since they were written (xmax 0). Several daemons claim from the
// same end of the queue: a row another claim leased after this one's
// snapshot was locked again in its new version, rechecked and passed over
// — a lock and a WAL record each, up to 2,000 rows in one claim, and the
// other daemon's completion of the task waited for this claim's commit.
// (Past a mark, the rows with an xmax are mostly those other daemons just
// leased: telling them from the others, as settled does, cost ten daemons
// a sixth of their rate.) A claim from the first task takes settled rows:
// it passes over rows leased since its snapshot in the same way, and takes
// a row passed over for another reason (locked by a transaction that has
// ended, or left by a claim that aborted).
//
// Its limit, tenant, mark and $12 are sub-selects so that no plan knows them:
// the generic plan, costed for a tenth of the queue, then no longer loses
// to custom plans costed for the claim's size or the rows past its mark,
// and a burn-down's claims are not each planned afresh
// (TestAnAloneClaimKeepsItsGenericPlan).
//
// Its tasks are marked uncapped without a look-up (cappedNow): it claims
// nothing of a tenant with a cap.
var claimAloneSQL = `/* claims.claimAlone */
WITH ` + claimNow + `,
due AS (
	SELECT ctid FROM tasks
	WHERE queue = $1 AND tenant = (SELECT $8::text)
		AND (priority, run_at, id) > ((SELECT $9::int), (SELECT $10::timestamptz), (SELECT $11::bigint))
		AND CASE WHEN ` + untouched + ` THEN true WHEN (SELECT $12::bool) THEN false ELSE ` + latestVersion + ` END
		AND ` + dueNow + `
		AND (SELECT o.tenant FROM tasks o
			WHERE o.queue = $1 AND o.tenant > (SELECT $8::text) AND ` + dueNow + `
			ORDER BY o.tenant, o.priority, o.run_at, o.id
			LIMIT 1) IS NULL
		AND (SELECT o.tenant FROM tasks o
			WHERE o.queue = $1 AND o.tenant < (SELECT $8::text) AND ` + dueNow + `
			ORDER BY o.tenant DESC, o.priority DESC, o.run_at DESC, o.id DESC
			LIMIT 1) IS NULL
		AND NOT EXISTS (SELECT FROM tenant_shares s WHERE s.tenant = $8::text AND s.max_running IS NOT NULL)
	ORDER BY priority, run_at, id
	LIMIT (SELECT $3::int)
	FOR UPDATE OF tasks SKIP LOCKED
)
` + claimedDue("due", "ctid", "false", "false")

// claimDueSQL is claimSQL without the expired leases (ClaimParams.DueOnly).
var claimDueSQL = `/* claims.claimDue */
WITH RECURSIVE ` + claimNow + `,
` + claimDue + `
` + claimedDue("due", "id", inLane("t.id"), cappedNow)

// claimSQL locks up to $3 runnable tasks of one queue — due queued/retrying
// tasks, and running tasks whose lease expired — and leases them to $2 with a
// new fencing token. In the same statement it records the expired attempts
// (lease_expired) and dead-letters expired tasks that have no attempts left.
// Each branch reads its own partial index; the update takes its ids as an
// array so that the plan stays an index lookup however the tables grow.
var claimSQL = `/* claims.claim */
WITH RECURSIVE ` + claimNow + `,
` + claimDue + `,
expired_leases AS (
	SELECT id, priority, lease_expires_at AS since, attempt >= max_attempts AS exhausted,
		lease_token, attempt, generation, lease_owner, coalesce(attempted_at, updated_at) AS attempted_at
	FROM tasks, now
	WHERE queue = $1 AND state = 'running' AND lease_expires_at <= now.t
		AND (coalesce(cardinality($6::text[]), 0) = 0 OR kind = ANY ($6::text[]))
		AND ` + canRun + ` AND ` + settled + `
	ORDER BY lease_expires_at, id
	LIMIT $3
	FOR UPDATE OF tasks SKIP LOCKED
),
picked AS (
	SELECT id FROM (
		SELECT id, priority, since FROM due
		UNION ALL
		SELECT id, priority, since FROM expired_leases WHERE NOT exhausted
	) c
	ORDER BY priority, since, id
	LIMIT $3
),
-- A task whose last allowed attempt lost its lease (the worker crashed or
-- stalled, perhaps because of the task itself) is dead-lettered, not run
-- again forever.
buried AS (
	UPDATE tasks t SET
		state = CASE WHEN t.compensation IS NOT NULL THEN 'needs_attention' WHEN ` + enters("true") + ` THEN 'compensating'
			WHEN t.cancel_requested_at IS NULL THEN 'dead' ELSE 'cancelled' END,
		last_error = CASE WHEN t.cancel_requested_at IS NULL
			THEN 'the lease of its last allowed attempt expired: the worker crashed or stalled'
			ELSE 'cancelled by ' || coalesce(t.cancel_requested_by, 'operator') END,
		` + enterSet(enters("true"), `CASE WHEN t.cancel_requested_at IS NULL THEN 'failed' ELSE 'cancelled' END`) + `,
		lease_expires_at = NULL,
		run_at = CASE WHEN ` + enters("true") + ` THEN (SELECT now.t FROM now) ELSE t.run_at END,
		finished_at = CASE WHEN t.compensation IS NULL AND NOT ` + enters("true") + ` THEN (SELECT now.t FROM now) END,
		updated_at = (SELECT now.t FROM now)
	FROM expired_leases e
	WHERE t.id = e.id AND e.exhausted
	RETURNING t.id, t.generation, e.attempt, ` + EventColumns + `
),
` + outbox.EventsCTE("buried", "(SELECT t FROM now)") + `,
expired AS (
	INSERT INTO task_attempts (task_id, lease_token, attempt, generation, worker, started_at, ended_at, outcome, error)
	SELECT e.id, e.lease_token, e.attempt, e.generation, e.lease_owner, e.attempted_at, (SELECT now.t FROM now), 'lease_expired',
		CASE WHEN e.exhausted THEN 'lease expired before the attempt finished; no attempts left'
		ELSE 'lease expired before the attempt finished; task claimed again' END
	FROM expired_leases e
	WHERE e.exhausted OR e.id IN (SELECT id FROM picked)
	` + AttemptConflict + `
),
` + claimedFrom("picked", "id", inLane("id"))

// AttemptConflict lets an attempt record replace an open one (ended_at NULL)
// written by a version that recorded attempts when they began. Only the
// statements that close an attempt they did not lease — an expired lease,
// found by a claim or an operator's cancel — can meet one. A fenced
// finishing write closes an attempt of its own claim, which no version
// since has recorded at its start (each claim's token is new to its task),
// so those statements insert plainly: ON CONFLICT's speculative insertion
// cost an extra index probe and WAL record a finished task.
const AttemptConflict = `ON CONFLICT (task_id, lease_token) DO UPDATE SET
		ended_at = EXCLUDED.ended_at, outcome = EXCLUDED.outcome, error = EXCLUDED.error`

// EventColumns are what outbox.EventsCTE reads from a state change's
// RETURNING, besides id, generation and attempt.
const EventColumns = `t.tenant, t.queue, t.kind, t.state, t.max_attempts, t.last_error, t.result`

// The batched statements below are driven by their ids, whatever the
// planner believes about the table:
//
//   - No fence tests the state column. A fence on state = 'running' let the
//     planner read tasks_leased_idx (partial on that state); with statistics
//     gathered while nothing ran it estimated one running row, started from
//     all of them and looped over the batch's arrays (one 1,000-task
//     completion took 190-330 ms). A lease is held exactly while a task runs
//     (a rule of tasks_check), so the fences test the lease instead — the token,
//     and lease_expires_at set or unexpired — from which no partial index's
//     predicate follows: only the primary key can find the rows.
//   - A write finds its rows by id = ANY (the ids), which only the primary
//     key answers, and joins nothing: what differs per task (its token,
//     result, error) comes as a JSON object keyed by id, read with ->, a
//     binary search. (A join of the rows with the batch is one the planner
//     may turn into a loop over the batch for every row.) The fence is a
//     condition on the row itself, so a row that changed while the
//     statement waited for its lock is checked again as it is now.
//   - The heartbeat, which must skip locked rows, locks them row by row in
//     a LATERAL per-id look-up that OFFSET 0 keeps from being flattened, so
//     the join runs from the ids to the rows, never the other way.
//   - The daemon's sessions plan without sequential scans (package pgplan),
//     so a plan cached while the table was small is an index plan too.
//
// Deadlocks between batched writers: the heartbeat never waits for a row
// lock (SKIP LOCKED), and a pool's one completer writes only leases it
// holds, so completions of different pools touch different rows except for
// a zombie's, whose write is fenced out. Every batch is locked in id order
// (an index scan for id = ANY reads the ids sorted), so two writers of the
// same rows wait for each other instead of deadlocking.

// liveLeases is a CTE named live: the ids of the batch ($1 ids, $2 tokens)
// whose token is current and whose lease has not expired (by $3), each
// looked up by primary key, in id order, and locked with lock (or not).
func liveLeases(lock string) string {
	return `live AS MATERIALIZED (
	SELECT u.id
	FROM (SELECT * FROM unnest($1::bigint[], $2::bigint[]) ORDER BY 1 OFFSET 0) AS u(id, token)
	CROSS JOIN LATERAL (
		SELECT FROM tasks t
		WHERE t.id = u.id AND t.lease_token = u.token AND t.lease_expires_at > coalesce($3::timestamptz, now())
		OFFSET 0
		` + lock + `
	) l
)`
}

// closedAttempt reads, in a finishing statement's RETURNING, the worker and
// start of the attempt it closes. A finished attempt leaves both on the row
// (lease_owner then names the worker of the last attempt; only a running
// task's is a lease holder), so they are read from the updated row itself:
// reading the row as it was before the statement, a subquery per column,
// cost a third of a completion's buffer reads. Only a task claimed before
// attempted_at existed reads its old updated_at.
const closedAttempt = `t.lease_owner,
		coalesce(t.attempted_at, (SELECT p.updated_at FROM tasks p WHERE p.id = t.id)) AS attempted_at`

// fenced is the condition of a finishing write: the rows of the ids $1
// whose token is the one $2 maps their id to and whose lease still holds.
const fenced = `t.id = ANY ($1::bigint[]) AND t.lease_token = ($2::jsonb -> t.id::text)::bigint
		AND ` + leaseHeld

// heartbeatSQL extends the leases whose token is current and unexpired, and
// reports, for each, whether an operator asked to cancel it. Locked rows are
// skipped (their attempt is being finished, or the ledger holds the task
// for a moment): one busy row must not hold up the others' renewals.
var heartbeatSQL = `/* claims.heartbeat */
WITH ` + liveLeases(`FOR NO KEY UPDATE SKIP LOCKED`) + `
UPDATE tasks t SET
	lease_expires_at = coalesce($3::timestamptz, now()) + $4::interval,
	updated_at = coalesce($3::timestamptz, now())
WHERE t.id = ANY (ARRAY(SELECT id FROM live))
RETURNING t.id, t.cancel_requested_at IS NOT NULL`

// currentSQL tells which of the given leases still hold (token current,
// lease unexpired) without waiting for row locks: a heartbeat that skipped
// a busy row asks whether it was busy or lost.
var currentSQL = `/* claims.current */
WITH ` + liveLeases("") + `
SELECT id FROM live`

// leaseHeld fences a finishing write: the attempt's lease is still on the
// row (it is cleared when the attempt ends, and replaced when the task is
// claimed again, which also moves the token).
const leaseHeld = `t.lease_expires_at IS NOT NULL`

// succeedSQL finishes fenced attempts successfully; $3 maps ids to results
// (an id left out stores NULL). A success writes no attempt record: the
// succeeded row holds it (migration 00038; read through attempt_records).
// The end of a compensation phase, 'compensated', still writes one.
var succeedSQL = `/* claims.succeed */
WITH done AS (
	UPDATE tasks t SET
		state = CASE WHEN t.compensation IS NULL THEN 'succeeded' ELSE 'compensated' END,
		result = $3::jsonb -> t.id::text,
		last_error = NULL, -- the failures before are in the attempt records
		lease_expires_at = NULL,
		finished_at = coalesce($4::timestamptz, now()),
		updated_at = coalesce($4::timestamptz, now())
	WHERE ` + fenced + `
	RETURNING t.id, t.lease_token, t.attempt, t.generation, ` + EventColumns + `, ` + closedAttempt + `
),
closed AS (
	INSERT INTO task_attempts (task_id, lease_token, attempt, generation, worker, started_at, ended_at, outcome)
	SELECT id, lease_token, attempt, generation, lease_owner, attempted_at, coalesce($4::timestamptz, now()), state
	FROM done WHERE state <> 'succeeded'
),
` + outbox.EventsCTE("done", "coalesce($4::timestamptz, now())") + `
SELECT id FROM done`

// failField reads one field of a failure from failSQL's $3 for row t.
func failField(name, typ string) string {
	return `($3::jsonb -> t.id::text ->> '` + name + `')::` + typ
}

// failEnds: the failure ends the attempts of t's current phase (final, or
// none left).
var failEnds = `(` + failField("final", "bool") + ` OR t.attempt >= t.max_attempts)`

// failEnters: the failure ends t's forward path (it ends its attempts, or
// an operator asked to cancel) with something to undo.
var failEnters = enters(`t.cancel_requested_at IS NOT NULL OR ` + failEnds)

// failSQL records failed attempts: retrying after the given delay, dead
// when the failure is final or the attempts are used up, or cancelled when
// an operator asked for it meanwhile (a cancelled task does not wait out a
// backoff). The error is kept.
//
// $3 maps each id to {"error": text, "delay_ms": n, "final": bool}.
var failSQL = `/* claims.fail */
WITH done AS (
	UPDATE tasks t SET
		state = CASE WHEN t.compensation IS NOT NULL THEN CASE WHEN ` + failEnds + ` THEN 'needs_attention' ELSE 'compensating' END
			WHEN ` + failEnters + ` THEN 'compensating'
			WHEN t.cancel_requested_at IS NOT NULL THEN 'cancelled'
			WHEN ` + failEnds + ` THEN 'dead' ELSE 'retrying' END,
		run_at = CASE WHEN ` + failEnters + ` THEN coalesce($4::timestamptz, now())
			WHEN t.cancel_requested_at IS NULL AND NOT ` + failEnds + `
			THEN coalesce($4::timestamptz, now()) + ` + failField("delay_ms", "bigint") + ` * interval '1 millisecond' ELSE t.run_at END,
		finished_at = CASE WHEN t.compensation IS NULL AND (t.cancel_requested_at IS NOT NULL OR ` + failEnds + `)
			AND NOT ` + failEnters + ` THEN coalesce($4::timestamptz, now()) END,
		` + enterSet(failEnters, `CASE WHEN t.cancel_requested_at IS NULL THEN 'failed' ELSE 'cancelled' END`) + `,
		last_error = ` + failField("error", "text") + `,
		lease_expires_at = NULL,
		updated_at = coalesce($4::timestamptz, now())
	WHERE ` + fenced + `
	RETURNING t.id, t.lease_token, ` + ClosedAttemptNumber + `, t.generation, ` + EventColumns + `, ` + closedAttempt + `
),
closed AS (
	INSERT INTO task_attempts (task_id, lease_token, attempt, generation, worker, started_at, ended_at, outcome, error)
	SELECT id, lease_token, attempt, generation, lease_owner, attempted_at, coalesce($4::timestamptz, now()),
		CASE WHEN state = 'retrying' OR (state = 'compensating' AND NOT entered) THEN 'retry' ELSE state END, last_error
	FROM done
),
` + outbox.EventsCTE("done", "coalesce($4::timestamptz, now())") + `
SELECT id, state FROM done`

// releaseSQL hands fenced tasks back to the queue at once (graceful
// shutdown). The released attempt does not count against max_attempts.
var releaseSQL = `/* claims.release */
WITH done AS (
	UPDATE tasks t SET
		state = ` + queuedState + `,
		attempt = t.attempt - 1,
		run_at = coalesce($3::timestamptz, now()),
		lease_expires_at = NULL,
		updated_at = coalesce($3::timestamptz, now())
	WHERE ` + fenced + `
	RETURNING t.id, t.lease_token, t.queue, t.attempt + 1 AS attempt, t.generation, ` + closedAttempt + `
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
SELECT done.id FROM done WHERE ` + woken

// deferSQL hands fenced tasks back to the queue to run at a given time
// without counting the attempt: the attempt waited for a limit. The reason
// stays on the task until it is claimed again. Only the first deferral of
// a wait is recorded as an attempt: a task whose last attempt was
// deferred already waits, and a record per deferral (one a second on a
// full cap) would only pile up; but a deferred attempt that wrote the
// journal (it performed an effect before the limit held the next) is
// recorded whatever came before, so that the journal's fencing tokens
// each have their attempt, and so is one that sent a call that failed for
// now (a breaker's probe, say), as its deferral says ($3's performed):
// its key reached the downstream though the journal has no row of it.
// A task an operator asked to cancel meanwhile is due at once, so that the
// next claim acknowledges the cancel instead of waiting for the limit.
//
// A park whose task was woken during the attempt (WakeTasks marked it: its
// run_at past its attempt's start) queues it due at once: the decision or
// signal it is about to wait for came already.
//
// $3 maps each id to {"until": timestamptz, "reason": text, "park": bool,
// "performed": bool}.
var deferSQL = `/* claims.defer */
WITH done AS (
	UPDATE tasks t SET
		state = CASE WHEN ($3::jsonb -> t.id::text ->> 'park')::bool AND t.compensation IS NULL AND t.cancel_requested_at IS NULL
			AND t.run_at <= t.attempted_at THEN 'waiting' ELSE ` + queuedState + ` END,
		attempt = t.attempt - 1,
		run_at = CASE WHEN t.cancel_requested_at IS NULL AND NOT (` + wokenMeanwhile + `)
			THEN ($3::jsonb -> t.id::text ->> 'until')::timestamptz
			ELSE coalesce($4::timestamptz, now()) END,
		wait_reason = CASE WHEN t.cancel_requested_at IS NULL AND NOT (` + wokenMeanwhile + `)
			THEN $3::jsonb -> t.id::text ->> 'reason' END,
		lease_expires_at = NULL,
		updated_at = coalesce($4::timestamptz, now())
	WHERE ` + fenced + `
	RETURNING t.id, t.lease_token, t.attempt + 1 AS attempt, t.generation, $3::jsonb -> t.id::text ->> 'reason' AS wait_reason, ` + closedAttempt + `
),
closed AS (
	INSERT INTO task_attempts (task_id, lease_token, attempt, generation, worker, started_at, ended_at, outcome, error)
	SELECT id, lease_token, attempt, generation, lease_owner, attempted_at, coalesce($4::timestamptz, now()),
		'deferred', wait_reason
	FROM done
	WHERE NOT EXISTS (
		SELECT FROM (SELECT outcome FROM task_attempts a WHERE a.task_id = done.id ORDER BY a.lease_token DESC LIMIT 1) last
		WHERE last.outcome = 'deferred')
		OR ` + ledger.WroteSQL("done.id", "done.generation", "done.lease_token") + `
		OR ($3::jsonb -> done.id::text ->> 'performed')::bool IS TRUE
)
SELECT id FROM done`

// wokenMeanwhile: a parking task that WakeTasks woke during its attempt.
const wokenMeanwhile = `($3::jsonb -> t.id::text ->> 'park')::bool AND t.run_at > t.attempted_at`

// cancelEnters: stopSQL acknowledges a cancel of a task with something to
// undo.
var cancelEnters = enters(`$5 = 'cancelled'`)

// stopSQL ends a running attempt, fenced on its token, without a retry: the
// acknowledgement of an operator's cancel ($5 = 'cancelled', the task is
// finished, or compensating when it has something to undo) or a task parked for an operator ($5 = 'needs_attention': an
// effect of unknown outcome may not be performed blindly). The attempt's
// outcome is the same word.
var stopSQL = `/* claims.stop */
WITH done AS (
	UPDATE tasks t SET
		state = CASE WHEN ` + cancelEnters + ` THEN 'compensating' ELSE $5 END,
		last_error = CASE WHEN $5 = 'cancelled' AND t.cancel_requested_by IS NOT NULL THEN 'cancelled by ' || t.cancel_requested_by ELSE $3 END,
		` + enterSet(cancelEnters, `'cancelled'`) + `,
		lease_expires_at = NULL,
		run_at = CASE WHEN ` + cancelEnters + ` THEN coalesce($4::timestamptz, now()) ELSE t.run_at END,
		finished_at = CASE WHEN $5 = 'cancelled' AND NOT ` + cancelEnters + ` THEN coalesce($4::timestamptz, now()) END,
		updated_at = coalesce($4::timestamptz, now())
	WHERE ` + fenced + `
	RETURNING t.id, t.lease_token, ` + ClosedAttemptNumber + `, t.generation, ` + EventColumns + `, ` + closedAttempt + `
),
closed AS (
	INSERT INTO task_attempts (task_id, lease_token, attempt, generation, worker, started_at, ended_at, outcome, error)
	SELECT id, lease_token, attempt, generation, lease_owner, attempted_at, coalesce($4::timestamptz, now()), $5, last_error
	FROM done
),
` + outbox.EventsCTE("done", "coalesce($4::timestamptz, now())") + `,
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
SELECT id FROM done`

const getSQL = `/* claims.get */ SELECT ` + taskColumns + ` FROM tasks WHERE id = $1 AND ($2 = '' OR tenant = $2)`

const getByKeySQL = `/* claims.get_by_key */ SELECT ` + taskColumns + ` FROM tasks WHERE tenant = $1 AND submission_key = $2`

// taskFilter is ListParams as SQL over tasks: $1 tenant, $2 queue, $3 kind,
// $4 states, $5 created since, $6 created until (empty or NULL: any).
const taskFilter = `($1 = '' OR tenant = $1)
  AND ($2 = '' OR queue = $2)
  AND ($3 = '' OR kind = $3)
  AND (cardinality($4::text[]) = 0 OR state = ANY($4::text[]))
  AND ($5::timestamptz IS NULL OR created_at >= $5)
  AND ($6::timestamptz IS NULL OR created_at < $6)`

// listSQL pages backwards from a cursor id ($7), newest first.
const listSQL = `/* claims.list */
SELECT ` + taskColumns + ` FROM tasks
WHERE ` + taskFilter + `
  AND ($7::bigint = 0 OR id < $7)
ORDER BY id DESC
LIMIT $8`

// countSQL counts the tasks of a filter by state.
const countSQL = `/* claims.count */ SELECT state, count(*) FROM tasks WHERE ` + taskFilter + ` GROUP BY state`

// filteredIDsSQL pages through a filter's ids, newest first, for bulk
// actions.
const filteredIDsSQL = `/* claims.filteredIDs */
SELECT id FROM tasks WHERE ` + taskFilter + ` AND ($7::bigint = 0 OR id < $7)
ORDER BY id DESC LIMIT $8`

// attemptsSQL lists the recorded attempts of a task (attempt_records: a
// success is held by its row) and, while it runs, the attempt in progress
// (which is recorded when it ends).
const attemptsSQL = `/* claims.attempts */
SELECT task_id, attempt, generation, lease_token, worker, started_at, ended_at,
	coalesce(outcome, '') AS outcome, coalesce(error, '') AS error
FROM attempt_records WHERE task_id = $1
UNION ALL
SELECT t.id, t.attempt, t.generation, t.lease_token, t.lease_owner, coalesce(t.attempted_at, t.updated_at),
	NULL, '', ''
FROM tasks t
WHERE t.id = $1 AND t.state = 'running'
  AND NOT EXISTS (SELECT 1 FROM task_attempts a WHERE a.task_id = t.id AND a.lease_token = t.lease_token)
ORDER BY lease_token`

// deleteFinishedSQL deletes, in one bounded batch, tasks that finished
// before now - $1, oldest first, with their attempt records, unless a
// notification of theirs is unsettled (unsettledEvents). Rows a
// concurrent operator action holds are skipped (a replay may be about to
// requeue one).
var deleteFinishedSQL = `/* claims.deleteFinished */
WITH victims AS (
	SELECT id FROM tasks
	WHERE state IN ('succeeded', 'dead', 'cancelled', 'compensated') AND finished_at < now() - $1::interval
		AND NOT EXISTS (` + unsettledEvents("tasks.id", "$1::interval") + `)
	ORDER BY finished_at
	LIMIT $2
	FOR UPDATE SKIP LOCKED
),
attempts AS (
	DELETE FROM task_attempts WHERE task_id IN (SELECT id FROM victims)
)
DELETE FROM tasks WHERE id IN (SELECT id FROM victims)`

// straysSQL reads up to $7 due tasks of queue $1 past the place ($3, $4,
// $5, $6: tenant, priority, run_at, id) in tasks_runnable_tenant_idx's
// order, and up to $7 running tasks whose lease expired (their worker is
// gone: stranded, tasks_leased_idx), and returns how many due tasks it
// read, the last one's place, and the counts by kind and needs, the due
// and the stranded apart, each with its first 5 ids, of those the pool
// cannot run: their kind is not among $2, or they need what its
// capabilities $8 lack (nothing with $8 NULL, a pool that runs any task:
// canRun). The place is a row comparison in the index's column order, so
// the read starts where the last one stopped (an index condition,
// TestStraysReadFromTheirPlace) rather than skipping what came before;
// the stranded are read from the start at every look.
const straysSQL = `/* claims.strays */
WITH read AS (
	SELECT tenant, priority, run_at, id, kind, needs FROM tasks
	WHERE queue = $1 AND state IN ('queued', 'retrying', 'compensating') AND run_at <= now()
		AND (tenant, priority, run_at, id) > ($3::text, $4::smallint, $5::timestamptz, $6::bigint)
	ORDER BY tenant, priority, run_at, id
	LIMIT $7
),
stranded AS (
	SELECT id, kind, needs FROM tasks
	WHERE queue = $1 AND state = 'running' AND lease_expires_at < now()
	ORDER BY lease_expires_at
	LIMIT $7
)
SELECT (SELECT count(*) FROM read), l.tenant, l.priority, l.run_at, l.id,
	coalesce((SELECT jsonb_agg(jsonb_build_object('kind', kind, 'needs', needs, 'n', n, 'ids', ids,
		'stranded', stranded, 'stranded_ids', stranded_ids) ORDER BY kind, needs NULLS FIRST) FROM (
		SELECT kind, needs,
			count(*) FILTER (WHERE NOT s) AS n, (array_agg(id ORDER BY id) FILTER (WHERE NOT s))[1:5] AS ids,
			count(*) FILTER (WHERE s) AS stranded, (array_agg(id ORDER BY id) FILTER (WHERE s))[1:5] AS stranded_ids
		FROM (
			SELECT id, kind, needs, false AS s FROM read
			UNION ALL
			SELECT id, kind, needs, true FROM stranded
		) c
		WHERE NOT kind = ANY ($2::text[]) OR NOT (needs IS NULL OR $8::text[] IS NULL OR needs <@ $8::text[])
		GROUP BY kind, needs) k), '[]')
FROM (SELECT) one
LEFT JOIN LATERAL (
	SELECT tenant, priority, run_at, id FROM read ORDER BY tenant DESC, priority DESC, run_at DESC, id DESC LIMIT 1
) l ON true`

// queueLookTurnSQL takes the look at the queues' turn (unworkedQueuesSQL)
// in the leaders table for owner $1, for 50 s, and returns a row when it
// did; none when another pool has it. A statement of its own, committed at
// once: a fleet's daemons starting together would otherwise wait on the
// row's lock for the whole look of the first.
const queueLookTurnSQL = `/* claims.queueLookTurn */
INSERT INTO leaders (name, owner, expires_at) VALUES ('queue-look', $1, now() + interval '50 seconds')
ON CONFLICT (name) DO UPDATE SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at
WHERE leaders.expires_at < now()
RETURNING owner`

// unworkedQueuesSQL looks at the queues no live pool works, once a minute
// for the whole fleet (by the pool that took the turn, queueLookTurnSQL).
// It walks the queues with runnable tasks (a loose scan of
// tasks_runnable_tenant_idx) and those with running ones
// (tasks_leased_idx), one descent a queue whether or not its tasks are
// due, keeps the first $3 not among $1, and counts up to $2 of the due
// tasks of each and up to $2 of its running tasks whose lease expired,
// each with its first 5 ids; a queue with neither is left out. Counting
// the due tasks reads past the queue's tasks that are not due yet: only
// in queues no pool works.
const unworkedQueuesSQL = `/* claims.unworkedQueues */
WITH RECURSIVE runnable AS (
	(SELECT queue FROM tasks WHERE state IN ('queued', 'retrying', 'compensating') ORDER BY queue LIMIT 1)
	UNION ALL
	SELECT (SELECT t.queue FROM tasks t
		WHERE t.queue > r.queue AND t.state IN ('queued', 'retrying', 'compensating')
		ORDER BY t.queue LIMIT 1)
	FROM runnable r WHERE r.queue IS NOT NULL
),
leased AS (
	(SELECT queue FROM tasks WHERE state = 'running' ORDER BY queue LIMIT 1)
	UNION ALL
	SELECT (SELECT t.queue FROM tasks t WHERE t.queue > l.queue AND t.state = 'running' ORDER BY t.queue LIMIT 1)
	FROM leased l WHERE l.queue IS NOT NULL
),
unworked AS (
	SELECT DISTINCT queue FROM (
		SELECT queue FROM runnable
		UNION ALL
		SELECT queue FROM leased
	) a
	WHERE queue IS NOT NULL AND NOT queue = ANY (coalesce($1::text[], '{}'))
	ORDER BY queue
	LIMIT $3
)
SELECT u.queue, d.n, d.ids, x.n, x.ids
FROM unworked u
CROSS JOIN LATERAL (
	SELECT count(*) AS n, coalesce((array_agg(id ORDER BY id))[1:5], '{}') AS ids FROM (
		SELECT id FROM tasks
		WHERE queue = u.queue AND state IN ('queued', 'retrying', 'compensating') AND run_at <= now()
		ORDER BY tenant, priority, run_at, id -- the index's order: read through it, never the table
		LIMIT $2
	) t
) d
CROSS JOIN LATERAL (
	SELECT count(*) AS n, coalesce((array_agg(id ORDER BY id))[1:5], '{}') AS ids FROM (
		SELECT id FROM tasks
		WHERE queue = u.queue AND state = 'running' AND lease_expires_at < now()
		ORDER BY lease_expires_at
		LIMIT $2
	) t
) x
WHERE d.n > 0 OR x.n > 0
ORDER BY u.queue`

// runningByTenantSQL counts each tenant's running (leased) tasks: what a
// tenant's cap bounds.
const runningByTenantSQL = `/* claims.runningByTenant */
SELECT tenant, count(*) FROM tasks WHERE state = 'running' GROUP BY tenant ORDER BY tenant`
