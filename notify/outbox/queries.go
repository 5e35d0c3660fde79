package outbox

import "strings"

// All SQL of the outbox and notification_rules tables lives here, including
// the fragment (EventsCTE) with which the statements of package claims that
// change task states write their events. $now is coalesce($n::timestamptz,
// now()) so tests can pin the clock.

const ruleColumns = `name, coalesce(tenant, ''), coalesce(queue, ''), coalesce(kind, ''), events, channel,
	enabled, created_at, updated_at`

const insertRuleSQL = `/* outbox.insertRule */
INSERT INTO notification_rules (name, tenant, queue, kind, events, channel, enabled)
VALUES ($1, nullif($2, ''), nullif($3, ''), nullif($4, ''), $5, $6, $7)
ON CONFLICT (name) DO NOTHING
RETURNING ` + ruleColumns

const upsertRuleSQL = `/* outbox.upsertRule */
INSERT INTO notification_rules (name, tenant, queue, kind, events, channel, enabled)
VALUES ($1, nullif($2, ''), nullif($3, ''), nullif($4, ''), $5, $6, $7)
ON CONFLICT (name) DO UPDATE SET tenant = EXCLUDED.tenant, queue = EXCLUDED.queue, kind = EXCLUDED.kind,
	events = EXCLUDED.events, channel = EXCLUDED.channel, enabled = EXCLUDED.enabled, updated_at = now()
RETURNING ` + ruleColumns

const listRulesSQL = `/* outbox.listRules */ SELECT ` + ruleColumns + ` FROM notification_rules ORDER BY name`

// enableRuleSQL returns whether the rule was enabled before (a row lock
// orders two changes of one rule, so the answer is the change's own).
const enableRuleSQL = `/* outbox.enableRule */
UPDATE notification_rules r SET enabled = $2, updated_at = CASE WHEN old.enabled = $2 THEN r.updated_at ELSE now() END
FROM (SELECT name, enabled FROM notification_rules WHERE name = $1 FOR UPDATE) old
WHERE r.name = old.name
RETURNING old.enabled`

const deleteRuleSQL = `/* outbox.deleteRule */ DELETE FROM notification_rules WHERE name = $1`

const eventColumns = `id, tenant, task_id, generation, attempt, event, coalesce(rule, ''), coalesce(step_path, ''),
	channel, payload, state, failures, coalesce(last_error, ''), created_at, delivered_at`

// insertMessageSQL is the notify tool's event, written in its ledger
// transaction (a local effect).
const insertMessageSQL = `/* outbox.insertMessage */
INSERT INTO outbox (tenant, task_id, generation, attempt, event, step_path, channel, payload)
VALUES ($1, $2, $3, $4, 'message', $5, $6, jsonb_build_object('text', $7::text))
RETURNING id`

// claimSQL leases up to $2 due events to $1 with fresh tokens. An event of
// a rule waits while an earlier event of the same task and rule is pending
// (claimed or waiting to be retried): those are delivered one at a time, in
// order, so that updates in place end on the newest state.
var claimSQL = `/* outbox.claim */
WITH now AS (SELECT coalesce($4::timestamptz, now()) AS t),
due AS (
	SELECT o.id FROM outbox o, now
	WHERE o.state = 'pending' AND o.available_at <= now.t
		AND (o.lease_expires_at IS NULL OR o.lease_expires_at <= now.t)
		AND (o.rule IS NULL OR NOT EXISTS (
			SELECT 1 FROM outbox p
			WHERE p.task_id = o.task_id AND p.rule = o.rule AND p.id < o.id AND ` + unsettled + `))
	ORDER BY o.available_at, o.id
	LIMIT $2
	FOR UPDATE OF o SKIP LOCKED
)
UPDATE outbox o SET
	lease_owner = $1,
	lease_token = nextval('outbox_lease_token_seq'),
	lease_expires_at = now.t + $3::interval,
	updated_at = now.t
FROM now
WHERE o.id = ANY (ARRAY(SELECT id FROM due))
RETURNING ` + eventColumns + `, o.lease_token, o.lease_expires_at`

// unsettled is state = 'pending' spelled so that the planner cannot answer
// it from outbox_pending_idx: the claim's look-up of an earlier event of the
// same task and rule must go through outbox_task_idx. With statistics that
// saw no pending event, the partial index looks like one row and the claim
// would scan every pending event once per candidate.
const unsettled = `p.state NOT IN ('delivered', 'failed')`

// A claim holds an event while its lease is set (a rule of outbox_check): the
// settling writes below are fenced on the token and the lease, not on
// state = 'pending', which would let the planner read every pending event
// from the partial index instead of one row by its primary key.

// deliveredSQL marks a claimed event delivered, fenced on its token, with
// the channel it reached ($4, "" for its own).
const deliveredSQL = `/* outbox.delivered */
UPDATE outbox SET state = 'delivered', delivered_at = coalesce($3::timestamptz, now()),
	channel = coalesce(nullif($4::text, ''), channel),
	lease_owner = NULL, lease_expires_at = NULL, updated_at = coalesce($3::timestamptz, now())
WHERE id = $1 AND lease_token = $2 AND lease_expires_at IS NOT NULL`

// retrySQL hands a claimed event back, due again at $3, counting a failure
// when $4; fenced on its token.
const retrySQL = `/* outbox.retry */
UPDATE outbox SET available_at = $3, failures = failures + $4::int, last_error = nullif($5, ''),
	lease_owner = NULL, lease_expires_at = NULL, updated_at = coalesce($6::timestamptz, now())
WHERE id = $1 AND lease_token = $2 AND lease_expires_at IS NOT NULL`

// failedSQL gives a claimed event up, fenced on its token.
const failedSQL = `/* outbox.failed */
UPDATE outbox SET state = 'failed', failures = failures + 1, last_error = $3,
	lease_owner = NULL, lease_expires_at = NULL, updated_at = coalesce($4::timestamptz, now())
WHERE id = $1 AND lease_token = $2 AND lease_expires_at IS NOT NULL`

// taskEventsSQL lists a task's events (tenant $2, or any when empty).
const taskEventsSQL = `/* outbox.taskEvents */
SELECT ` + eventColumns + ` FROM outbox WHERE task_id = $1 AND ($2 = '' OR tenant = $2) ORDER BY id`

// failedOf selects failed events of tenant $2 (empty: any), oldest
// first, at most $3: of task $1 (through outbox_task_idx), or of every
// task. Two statements, so that a generic plan of the first still reads
// only the task's events.
func failedOf(oneTask bool) string {
	task := `$1::bigint IS NOT NULL`
	if oneTask {
		task = `task_id = $1`
	}
	return `state = 'failed' AND ` + task + ` AND ($2 = '' OR tenant = $2) ORDER BY id LIMIT $3`
}

// failedEventsSQL lists failed events (failedOf).
func failedEventsSQL(oneTask bool) string {
	return `/* outbox.failedEvents */ SELECT ` + eventColumns + ` FROM outbox WHERE ` + failedOf(oneTask)
}

// requeueSQL makes failed events (failedOf) pending again, due at $4, with
// no failures counted.
func requeueSQL(oneTask bool) string {
	return `/* outbox.requeue */
UPDATE outbox SET state = 'pending', failures = 0, last_error = NULL,
	available_at = coalesce($4::timestamptz, now()), updated_at = coalesce($4::timestamptz, now())
WHERE id = ANY (ARRAY(SELECT id FROM outbox WHERE ` + failedOf(oneTask) + ` FOR UPDATE))
RETURNING ` + eventColumns
}

// moveSQL sends pending event $1, claimed by no dispatcher, to channel $2.
const moveSQL = `/* outbox.move */
UPDATE outbox SET channel = $2, updated_at = now()
WHERE id = $1 AND state = 'pending' AND lease_expires_at IS NULL`

// deleteSettledSQL deletes, in one bounded batch, events delivered or given
// up before now - $1. Pending events stay, whatever their age, and so do a
// rule's events of a task not finished: they are what tells EventsCTE that
// the rule has a message to edit when the task moves on (a task that waits
// a week, then succeeds).
const deleteSettledSQL = `/* outbox.deleteSettled */
DELETE FROM outbox WHERE id = ANY (ARRAY(
	SELECT o.id FROM outbox o
	WHERE o.state IN ('delivered', 'failed') AND o.updated_at < now() - $1::interval
		AND (o.rule IS NULL OR NOT EXISTS (SELECT FROM tasks t WHERE t.id = o.task_id
			AND t.state NOT IN ('succeeded', 'dead', 'cancelled', 'compensated')))
	LIMIT $2))`

// EventsCTE is the transactional outbox as a fragment of the statements of
// package claims that change task states: a CTE named events that writes,
// in the same statement, one event per changed task and matching enabled
// notification rule. src names the statement's CTE of changed rows, which
// must have the columns id, generation, attempt, tenant, queue, kind,
// state, max_attempts, last_error and result; now is the statement's
// clock. A state that no rule asks for writes nothing, so without rules a
// state change costs what it did; with rules the event commits with the
// change, and is fenced as the change is.
//
// A rule also hears of the states it does not ask for, in an event marked
// update_only, once it has written an event for the task's generation: its
// message is then edited to say where the task went (a "retrying" message
// would otherwise say so after the task succeeded), but no state it does
// not ask for posts one. That costs a look-up in outbox_task_idx for each
// changed row in such a state, only where a rule matches the row.
//
// The rules drive the join: each enabled rule reads the changed rows once
// (a rescan of the CTE's stored rows), and without rules nothing is read.
// Joined the other way (OFFSET 0 keeps the LATERAL from being flattened
// into it), every changed row rescanned the rules table: 2 µs a finished
// task with no rule at all, a twentieth of a no-op task's PostgreSQL time.
func EventsCTE(src, now string) string {
	eventsArray := "{" + strings.Join(Events, ",") + "}"
	return `events AS (
	INSERT INTO outbox (tenant, task_id, generation, attempt, event, rule, channel, payload,
		available_at, created_at, updated_at)
	SELECT s.tenant, s.id, s.generation, s.attempt, s.state, r.name, r.channel,
		jsonb_strip_nulls(jsonb_build_object('kind', s.kind, 'queue', s.queue, 'state', s.state,
			'attempt', s.attempt, 'max_attempts', s.max_attempts,
			'error', left(s.last_error, 1000), 'result', left(s.result::text, 1000),
			'update_only', CASE WHEN NOT s.state = ANY (r.events) THEN true END)),
		` + now + `, ` + now + `, ` + now + `
	FROM notification_rules r CROSS JOIN LATERAL (
		SELECT * FROM ` + src + ` s
		WHERE coalesce(r.tenant = s.tenant, true)
			AND coalesce(r.queue = s.queue, true) AND coalesce(r.kind = s.kind, true)
			AND (s.state = ANY (r.events)
				OR s.state = ANY ('` + eventsArray + `'::text[]) AND EXISTS (
					SELECT FROM outbox o WHERE o.task_id = s.id AND o.rule = r.name AND o.generation = s.generation))
		OFFSET 0
	) s
	WHERE r.enabled
	ORDER BY s.id, r.name
)`
}

// backlogSQL counts the pending events and the age of the oldest due one
// (metrics gauges), from the partial index of pending events.
const backlogSQL = `/* outbox.backlog */
SELECT count(*), coalesce(extract(epoch FROM now() - min(available_at) FILTER (WHERE available_at <= now())), 0)::float8
FROM outbox WHERE state = 'pending'`
