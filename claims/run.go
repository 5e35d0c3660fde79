package claims

// claimRunSQL is claimDueSQL's crowd branch for thin tenants, as a
// statement of its own: a crowd's turns read in one pass over
// tasks_runnable_tenant_idx instead of a descent per tenant.
//
// The full claim finds a crowd's tenants by a loose index scan (walk), a
// descent per tenant, and reads each one's turn in a descent of its own:
// with 10,000 tenants of two tasks each, a claim of 100 walked 64 tenants
// and served 50, and took 1.8-1.9 ms against 1.15 for one tenant's 100
// tasks (BENCHMARKS.md). When tenants are thin (a few due tasks each)
// their tasks lie next to each other in the index, and one ordered read
// from the cursor $8 holds many tenants' turns:
//
//   - crowd: whether crowdAt tenants have due tasks from the cursor on,
//     among the first 8·crowdAt entries (a read that stops at the
//     crowdAt-th tenant). A run claim serves a crowd only: below one, the
//     full claim weighs every tenant instead of taking turns. The read is
//     skipped when the loop trusts the crowd ($11): its last run claims,
//     provenRuns at most, came back full, the first of them after proving
//     it for a claim at least as large (ClaimHint.trusted). Proving it
//     was about 0.09 ms of a 1.5 ms claim of 100 over 10,000 tenants.
//     The trust is a hysteresis, not a proof: a full claim does not show a
//     crowd (a few weighted tenants can fill one), so once a crowd thins
//     out below crowdAt a loop may take turns, and open the newcomer
//     lane, for up to provenRuns claims where the full claim would have
//     weighed every tenant; a run that comes back short (the rotation's
//     end) ends the chain at once, and the full claim tops it up;
//   - turns: the entries from the cursor on, at most 8·max(crowdAt, $3),
//     numbered within each tenant, each tenant's first ones up to its turn
//     — ceil(max($3, 64)·w/crowdAt), as claimDue's turns, less what the
//     loop's last claims gave the tenant at the cursor ($9), and for a
//     capped tenant at most its room (agentledger_tenant_turn, counted as
//     the read reaches it) — until the batch less the lane is full. The
//     read is pulled row by row: it stops there. While no tenant has a
//     share row, every turn is the same and the read is filtered on k
//     alone; the weighted branch, which carries each tenant's share and
//     room from its first entry to its others (a join and a second
//     window), is not started. That branch cost 0.07 ms of a 0.3 ms
//     read of 100 turns over 10,000 tenants (EXPLAIN ANALYZE);
//   - the newcomer lane first, as in claimDue; then the turns' tasks,
//     locked (SKIP LOCKED) if still settled: the turns are read whole
//     before the first is locked, and a task another daemon leased in
//     between would be locked in its new version. They are fetched by
//     the ctid the turns read them at, and leased by the ctid they were
//     locked at (leaseRows): two descents of tasks_pkey a task less, 7% of
//     a claim of 100 over 10,000 tenants.
//
// Each row of its answer also carries the last tenant of the rotation it
// served, the greatest of the turns' it locked (all from the cursor on),
// in the database's order of text: the loop's cursor moves there. Asked
// apart (Store.lastServed), it was a round trip more a claim on every
// database that does not sort text bytewise — en_US.UTF-8, C.UTF-8 —
// 0.05 ms of a claim of 100 over 10,000 tenants. (A locked row the
// update passes over, changed after the statement's snapshot, still
// counts: the cursor moves to its tenant, which the next claim serves.)
//
// Both reads stop at 8 entries a tenant: a tenant with up to 8 due tasks
// counts as thin. (At 4, ten daemons over 10,000 tenants of 5 tasks,
// whose claims of a few dozen give each tenant a turn of one, found no
// crowd in most runs and claimed in full; at 8 they did 7% more.)
//
// Its answer is claimDueSQL's (TestARunClaimAnswersAsTheFullClaim) when
// it answers in full. It answers nothing without a crowd from the cursor
// on (fewer tenants, deep ones, the end of the rotation, nothing due):
// the caller then claims in full, which wraps around. It comes back short
// when its read ends before the batch is full or another claim holds rows
// it picked; Store.Claim then tops the batch up with a full claim from
// where the run left the rotation.
var claimRunSQL = `/* claims.claimRun */
WITH ` + claimNow + `,
-- whether crowdAt tenants have due tasks from the cursor on: trusted
-- ($11), or read (an InitPlan, run only when $11 is false)
crowd AS (
	SELECT $11::bool OR (SELECT count(*) >= ` + crowdAt + ` FROM (
		SELECT tenant FROM (
			SELECT tenant, tenant IS DISTINCT FROM lag(tenant) OVER (ORDER BY tenant, priority, run_at, id) AS first
			FROM (
` + pastCursor("tenant, priority, run_at, id", "", "8 * "+crowdAt) + `
			) o
		) w
		WHERE first
		LIMIT (SELECT ` + crowdAt + `)
	) h) AS yes
),
` + newcomerLane(`(SELECT yes FROM crowd)`, `(SELECT $10::int)`) + `,
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
		` + numberedPastCursor + `
	) r
	WHERE NOT (SELECT yes FROM shares)
		AND k <= ceil(greatest($3, 64)::float8 / ` + crowdAt + `)::int - CASE WHEN tenant = $8::text THEN $9::int ELSE 0 END
	ORDER BY tenant, priority, run_at, id
	LIMIT (SELECT $3::int - cardinality(ids) FROM lane_ids))
	UNION ALL
	(SELECT ctid FROM (
		SELECT r.id, r.ctid, r.tenant, r.priority, r.run_at, r.k,
			max(CASE WHEN r.k = 1 THEN ceil(greatest($3, 64) * coalesce(s.weight, 1)::float8 / ` + crowdAt + `)::int END) OVER w AS turn,
			max(CASE WHEN r.k = 1 AND s.max_running IS NOT NULL THEN agentledger_tenant_turn(r.tenant) END) OVER w AS room
		FROM (
			` + numberedPastCursor + `
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
	WHERE ctid = ANY (ARRAY(SELECT ctid FROM turns)) AND ` + dueNow + ` AND ` + settled + `
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
` + claimedDue("due", "ctid", inLane("t.id"), cappedNow) + `, (SELECT max(tenant) FROM locked)`

// numberedPastCursor is the turns' read: the due tasks past the cursor,
// settled and not in the lane, numbered within each tenant (k).
var numberedPastCursor = `SELECT id, ctid, tenant, priority, run_at, row_number() OVER (PARTITION BY tenant ORDER BY priority, run_at, id) AS k
		FROM (
` + pastCursor("id, ctid, tenant, priority, run_at", notInLane+settled+" AND ", "8 * greatest("+crowdAt+", $3::int)") + `
		) o`

// pastCursor reads cols of the due tasks from the cursor's tenant ($8) on,
// in rotation order, that pass filter (a condition ending in AND, or ""),
// at most limit of them: the run claim's two reads of
// tasks_runnable_tenant_idx, each hiding its limit and the cursor from
// the plan.
func pastCursor(cols, filter, limit string) string {
	return `				SELECT ` + cols + ` FROM tasks
				WHERE queue = $1 AND tenant >= (SELECT $8::text) AND ` + filter + dueNow + `
				ORDER BY tenant, priority, run_at, id
				LIMIT (SELECT ` + limit + `)`
}
