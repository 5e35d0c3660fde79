package operator

import (
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/notify/outbox"
)

// The operator's actions on a task, one statement each, composed from the
// fragments of the tables they change: the claim protocol's (claims: an
// attempt closed and announced as its own state changes close and announce
// one), the ledger's (what a task has to undo, the compensations a replay
// reopens) and the outbox's (the events of a state change). Each runs with
// the task's row already locked (claims.Store.LockedRow), its first column
// the state before, so that an action tells "not found" (no row) from
// "not allowed".

// cancelSQL is the operator's cancel: a task that no live lease holds is
// cancelled at once (a running task whose lease expired too: no worker may
// ever come back for it, and its lost attempt is recorded); a running one is
// flagged, and its pool told on commit (claims.CancelChannel): its attempt
// stops before its next call, or at its next heartbeat for a pool that
// listens to no notification. The first
// column is the state before, so callers can tell "not found" (no row) from
// "already finished". A task with something to undo (see saga.go) enters
// its compensation phase instead of ending cancelled; one in that phase is
// not cancelled. Run it with the row already locked (claims.Store.LockedRow).
var cancelSQL = `/* operator.cancel */
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
		state = CASE WHEN cur.live THEN 'running' WHEN ` + ledger.UndoableSQL + ` THEN 'compensating' ELSE 'cancelled' END,
		compensation = CASE WHEN NOT cur.live AND ` + ledger.UndoableSQL + ` THEN 'cancelled' END,
		attempt = CASE WHEN NOT cur.live AND ` + ledger.UndoableSQL + ` THEN 0 ELSE t.attempt END,
		cancel_requested_at = CASE WHEN NOT cur.live AND ` + ledger.UndoableSQL + ` THEN NULL ELSE coalesce(t.cancel_requested_at, now.t) END,
		run_at = CASE WHEN NOT cur.live AND ` + ledger.UndoableSQL + ` THEN now.t ELSE t.run_at END,
		finished_at = CASE WHEN NOT cur.live AND NOT ` + ledger.UndoableSQL + ` THEN now.t END,
		last_error = CASE WHEN cur.live THEN t.last_error ELSE 'cancelled by ' || coalesce($4::text, 'operator') END,
		cancel_requested_by = $4::text,
		lease_expires_at = CASE WHEN cur.live THEN t.lease_expires_at END,
		updated_at = now.t
	FROM cur, now
	WHERE t.id = cur.id AND cur.state NOT IN ('succeeded', 'dead', 'cancelled', 'compensated') AND NOT cur.undoing
	RETURNING t.id, t.generation, ` + claims.ClosedAttemptNumber + `, ` + claims.EventColumns + `,
		CASE WHEN cur.live THEN ` + claims.NotifyCancel("cur.id", "cur.lease_token") + ` END AS told
),
` + outbox.EventsCTE("upd", "(SELECT t FROM now)") + `,
lost AS (
	INSERT INTO task_attempts (task_id, lease_token, attempt, generation, worker, started_at, ended_at, outcome, error)
	SELECT cur.id, cur.lease_token, cur.attempt, cur.generation, cur.lease_owner, cur.attempted_at, now.t,
		'lease_expired', 'lease expired before the attempt finished; task cancelled by ' || coalesce($4, 'operator')
	FROM cur, now
	WHERE cur.state = 'running' AND NOT cur.live
	` + claims.AttemptConflict + `
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
SELECT cur.state, upd.id IS NOT NULL, cur.undoing FROM cur LEFT JOIN upd ON upd.id = cur.id`

// requeueSQL is an operator's replay ($3 = 0) or re-run as a new intent
// ($3 = 1) of a task that no worker holds: it runs again from attempt 1,
// in the same generation (the ledger serves completed effects) or the next
// (every effect runs again). $4 lists the states it may start from. A
// replay is refused once retention removed any of the task's ledger rows.
// A replay of a task parked in its compensation phase continues the
// compensation, its failed compensations reopened (ledger.ReopenCompensationsCTE); a
// replay of its forward path tries again what failed and changed nothing
// (ledger.RereadCTE), and waits anew where such a call waited; a
// re-run starts the forward path afresh (a continued compensation is
// announced to the rules that ask for compensating), once the task's
// compensation, if it entered one, is over: a re-run of a task still
// undoing its effects would leave them half undone, out of its journal. A
// re-run clears the compensation and who asked for it; a replay keeps both
// (it continues that compensation, or the forward path of a task that had
// none). A task sent down its forward
// path again drops its result: the run's success writes it anew, and a
// run that ends otherwise must not show the last success's result beside
// its error. Run it with the row already locked (claims.Store.LockedRow).
var requeueSQL = `/* operator.requeue */
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
	RETURNING t.id, t.generation, t.state = 'compensating' AS undoing, ` + claims.ClosedAttemptNumber + `, ` + claims.EventColumns + `
),
` + outbox.EventsCTE("upd", "coalesce($5::timestamptz, now())") + `,
` + ledger.ReopenCompensationsCTE + `,
` + ledger.RereadCTE + `,
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
SELECT cur.state, cur.expired, cur.undoing, upd.id IS NOT NULL, (SELECT count(*) FROM wake) FROM cur LEFT JOIN upd ON upd.id = cur.id`

// compensateSQL is an operator's request to undo task $1's completed
// effects: a finished (or parked) task on its forward path that has
// something to undo enters its compensation phase, and the rules that ask
// for compensating hear of it. $3 lists the states it may start from; $5
// is who asked ("operator:alice", "tenant:acme, token ci-deploy (7)"; NULL:
// not said), kept beside the compensation until a re-run clears both.
var compensateSQL = `/* operator.compensate */
WITH cur AS (
	SELECT id, state, compensation IS NOT NULL AS undoing FROM tasks
	WHERE id = $1 AND ($2 = '' OR tenant = $2)
	FOR UPDATE
),
upd AS (
	UPDATE tasks t SET
		state = 'compensating',
		compensation = 'operator',
		compensation_requested_by = $5::text,
		attempt = 0,
		run_at = coalesce($4::timestamptz, now()),
		cancel_requested_at = NULL,
		finished_at = NULL,
		wait_reason = NULL,
		updated_at = coalesce($4::timestamptz, now())
	FROM cur
	WHERE t.id = cur.id AND t.state = ANY ($3::text[]) AND t.compensation IS NULL AND ` + ledger.UndoableSQL + `
	RETURNING t.id, t.generation, ` + claims.ClosedAttemptNumber + `, ` + claims.EventColumns + `
),
` + outbox.EventsCTE("upd", "coalesce($4::timestamptz, now())") + `,
wake AS (
	SELECT pg_notify('agentledger_task_insert', t.queue) FROM tasks t JOIN upd ON upd.id = t.id
)
SELECT cur.state, cur.undoing, upd.id IS NOT NULL, (SELECT count(*) FROM wake) FROM cur LEFT JOIN upd ON upd.id = cur.id`
