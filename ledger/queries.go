package ledger

import (
	"reflect"
	"strings"
	"sync"
)

// All SQL of the ledger table lives here; the fences of other packages'
// rows come in as their owners write them (Fence).

// fence is an attempt's Fence.FenceFrom: a FROM clause taking the fence's
// id and token parameters.
type fence func(id, token string) string

// fenced are the statements that check a fence.
type fenced struct {
	fence, reserveFast, lookup, insertOutcome, insertKeyedOutcome, insertKeyedOutcomes, record, landed, unbuilt, clearUnbuilt string
	// recordFound is record for a reconcilable effect its Find found
	// landed: the take that counted this attempt's performance counted
	// one that did not happen, and is taken back.
	recordFound string
}

// fencedByKind caches the statements of each kind of fence, keyed by its
// Go type (FenceFrom depends on the kind only), so an effect builds no SQL.
var fencedByKind sync.Map // reflect.Type → *fenced

// queriesOf returns the fenced statements of f's kind.
func queriesOf(f Fence) *fenced {
	key := reflect.TypeOf(f)
	if q, ok := fencedByKind.Load(key); ok {
		return q.(*fenced)
	}
	q := fencedQueries(f.FenceFrom)
	q.recordFound = strings.Replace(strings.Replace(q.record, "/* ledger.record */", "/* ledger.recordFound */", 1),
		"completed_at = now(),", "completed_at = now(), performed = l.performed - 1,", 1)
	actual, _ := fencedByKind.LoadOrStore(key, &q)
	return actual.(*fenced)
}

func fencedQueries(f fence) fenced {
	return fenced{
		// fence checks, inside the reservation transaction, that the
		// attempt still holds its lease, and holds a share lock on the
		// fencing row so no claim can take the lease until the
		// reservation commits.
		fence: `/* ledger.fence */ SELECT 1 FROM ` + f("$1", "$2") + ` FOR SHARE`,

		// reserveFast serves the two common cases in one autocommit
		// statement: a fresh reservation (fence and insert together; the
		// fencing row is share-locked for the statement) and a replay of
		// a finished effect (completed and failed are final, so the row
		// needs no lock to be served). It returns whether the lease held,
		// whether the row is new, and the existing row as the statement's
		// snapshot saw it (NULL state if none). Anything else — a pending
		// or unknown row, a row committed while the statement ran — goes
		// to the transactional path. On conflict the existing row decides
		// (I6: the primary key decides, not a look-up).
		reserveFast: `/* ledger.reserveFast */
WITH fence AS (
	SELECT id FROM ` + f("$10", "$9") + `
	FOR SHARE
),
ins AS (
	INSERT INTO ledger (tenant, operation, effect_key, request_hash, class, task_id,
		generation, step_path, owner_token, performed, compensate)
	SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, 1, $11::jsonb FROM fence
	ON CONFLICT (tenant, operation, effect_key) DO NOTHING
	RETURNING true
)
SELECT EXISTS (SELECT 1 FROM fence), EXISTS (SELECT 1 FROM ins),
	l.state, l.request_hash, l.result, coalesce(l.external_ref, ''), coalesce(l.error, '')
FROM (SELECT 1) one
LEFT JOIN ledger l ON l.tenant = $1 AND l.operation = $2 AND l.effect_key = $3`,

		// lookup is the read that starts a pure or keyed effect: whether
		// the lease holds, and the effect's row if it has one. It writes
		// nothing.
		lookup: `/* ledger.lookup */
SELECT EXISTS (SELECT 1 FROM ` + f("$4", "$5") + `),
	l.state, l.request_hash, l.result, coalesce(l.external_ref, ''), coalesce(l.error, '')
FROM (SELECT 1) one
LEFT JOIN ledger l ON l.tenant = $1 AND l.operation = $2 AND l.effect_key = $3`,

		// insertOutcome records a pure or keyed effect that was performed
		// with no reservation: one commit per effect. Fenced on the
		// lease; the primary key decides between concurrent performances
		// (the first that lands stands).
		insertOutcome: insertOutcome("insertOutcome", f, ""),

		// insertKeyedOutcome is insertOutcome for a keyed effect whose
		// record goes out alone (batch.go), committed without waiting for
		// its WAL to reach the disk, as insertKeyedOutcomes below.
		insertKeyedOutcome: insertOutcome("insertKeyedOutcome", f,
			`, lazy AS (SELECT set_config('synchronous_commit', 'off', true))`),

		// insertKeyedOutcomes is insertOutcome for the keyed effects of
		// several attempts at once (batch.go), each row fenced on its own
		// attempt's lease, committed without waiting for its WAL to reach
		// the disk (synchronous_commit off for its transaction alone): a
		// server crash in the moment before the flush loses the records,
		// and the next attempts send their calls again under the same
		// keys, which the downstream deduplicates — what a crash between a
		// call and its record already does. Nothing later in WAL outlives
		// them, so a task's completion, synchronous, is never durable
		// without its records. The fencing rows are share-locked in id
		// order, as every batch of the claim protocol locks its rows.
		insertKeyedOutcomes: insertKeyedOutcomes(f),

		// record stores the outcome, fenced twice: the row must still be
		// this attempt's reservation and the lease still this attempt's.
		// It returns the result as stored: jsonb normalises JSON (key
		// order, spacing, number spelling), and callers must see the same
		// bytes on the first run as on every replay, or requests built
		// from results would change.
		record: `/* ledger.record */
UPDATE ledger l SET state = $4, result = $5, external_ref = nullif($6, ''), error = nullif($7, ''),
	completed_at = now(), updated_at = now()
WHERE l.tenant = $1 AND l.operation = $2 AND l.effect_key = $3
	AND l.state = 'pending' AND l.owner_token = $8
	AND EXISTS (SELECT 1 FROM ` + f("$9", "$8") + `)
RETURNING l.result, coalesce(l.external_ref, '')`,

		// landed reads an outcome recorded by someone else, and whether
		// the attempt still holds its lease.
		landed: `/* ledger.landed */
SELECT l.state, l.request_hash, l.result, coalesce(l.external_ref, ''), coalesce(l.error, ''),
	EXISTS (SELECT 1 FROM ` + f("$5", "$4") + `)
FROM ledger l WHERE l.tenant = $1 AND l.operation = $2 AND l.effect_key = $3`,

		// unbuilt records as failed an effect its attempt could not build
		// (Ledger.Unbuilt): nothing was sent, so no request is hashed. Its
		// operation is its own (UnbuiltPrefix), so it never shares a key
		// with a built call; and it is not recorded where a built call of
		// the step has a row, whatever its state: that row says what may
		// have happened. An earlier attempt's unbuilt row is failed again,
		// unless an operator resolved it (completed). The fencing row is
		// share-locked, as a reservation's.
		unbuilt: `/* ledger.unbuilt */
WITH fence AS (
	SELECT id FROM ` + f("$9", "$8") + `
	FOR SHARE
),
built AS (
	SELECT EXISTS (SELECT FROM ledger b WHERE b.task_id = $5 AND b.generation = $6 AND b.step_path = $7
		AND NOT starts_with(b.operation, '` + UnbuiltPrefix + `')) AS yes
),
ins AS (
	INSERT INTO ledger (tenant, operation, effect_key, request_hash, class, state, task_id, generation, step_path,
		owner_token, performed, error, completed_at)
	SELECT $1, $2, $3, '\x'::bytea, $4, 'failed', $5, $6, $7, $8, 0, $10, now() FROM fence
	WHERE NOT (SELECT yes FROM built)
	ON CONFLICT (tenant, operation, effect_key) DO UPDATE SET state = 'failed', error = EXCLUDED.error,
		owner_token = EXCLUDED.owner_token, completed_at = now(), updated_at = now()
	WHERE ledger.state <> 'completed'
	RETURNING 1
)
SELECT EXISTS (SELECT FROM fence), (SELECT yes FROM built), EXISTS (SELECT FROM ins)`,

		// clearUnbuilt drops a step's unbuilt record, not resolved, once
		// its call is built: a step has an unbuilt row or built ones,
		// never both (Ledger.ClearUnbuilt). An operator's resolution that
		// commits first leaves the row completed and deletes nothing,
		// which the caller is told.
		clearUnbuilt: `/* ledger.clearUnbuilt */
WITH fence AS (
	SELECT id FROM ` + f("$6", "$5") + `
	FOR SHARE
)
DELETE FROM ledger l
WHERE l.task_id = $2 AND l.generation = $3 AND l.step_path = $4 AND l.tenant = $1
	AND starts_with(l.operation, '` + UnbuiltPrefix + `') AND l.state <> 'completed' AND EXISTS (SELECT FROM fence)`,
	}
}

// insertOutcome records a pure or keyed effect that was performed with no
// reservation: one commit per effect. Fenced on the lease; the primary key
// decides between concurrent performances (the first that lands stands).
// lazy, when not empty, is a CTE named lazy that the statement reads.
func insertOutcome(name string, f fence, lazy string) string {
	from := "fence"
	if lazy != "" {
		from = "fence, lazy"
	}
	return `/* ledger.` + name + ` */
WITH fence AS (
	SELECT id FROM ` + f("$14", "$9") + `
	FOR SHARE
)` + lazy + `
INSERT INTO ledger (tenant, operation, effect_key, request_hash, class, task_id,
	generation, step_path, owner_token, performed, state, result, external_ref, error, completed_at)
SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, 1, $10, $11, nullif($12, ''), nullif($13, ''), now() FROM ` + from + `
ON CONFLICT (tenant, operation, effect_key) DO NOTHING
RETURNING result, coalesce(external_ref, '')`
}

// insertKeyedOutcomes is the statement of fencedQueries' field of that
// name: parallel arrays in, the rows it inserted out (their keys, result
// as stored and external reference).
func insertKeyedOutcomes(f fence) string {
	return `/* ledger.insertKeyedOutcomes */
WITH input AS MATERIALIZED (
	SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bytea[], $5::text[], $6::bigint[], $7::int[],
		$8::text[], $9::bigint[], $10::text[], $11::text[], $12::text[], $13::text[], $14::bigint[])
		AS u(tenant, operation, effect_key, request_hash, class, task_id, generation, step_path, owner_token,
			state, result, external_ref, error, fence_id)
	ORDER BY fence_id, effect_key
),
fenced AS MATERIALIZED (
	SELECT i.* FROM input i
	CROSS JOIN LATERAL (SELECT 1 FROM ` + f("i.fence_id", "i.owner_token") + ` OFFSET 0 FOR SHARE) l
),
lazy AS (SELECT set_config('synchronous_commit', 'off', true))
INSERT INTO ledger (tenant, operation, effect_key, request_hash, class, task_id,
	generation, step_path, owner_token, performed, state, result, external_ref, error, completed_at)
SELECT tenant, operation, effect_key, request_hash, class, task_id, generation, step_path, owner_token, 1, state,
	result::jsonb, nullif(external_ref, ''), nullif(error, ''), now()
FROM fenced, lazy
ORDER BY fence_id, effect_key
ON CONFLICT (tenant, operation, effect_key) DO NOTHING
RETURNING tenant, operation, effect_key, result, coalesce(external_ref, '')`
}

// reserveSQL makes a fresh reservation owned by the attempt; on conflict the
// existing row decides.
const reserveSQL = `/* ledger.reserve */
INSERT INTO ledger (tenant, operation, effect_key, request_hash, class, task_id,
	generation, step_path, owner_token, performed, compensate)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 1, $10::jsonb)
ON CONFLICT (tenant, operation, effect_key) DO NOTHING`

const lockSQL = `/* ledger.lock */
SELECT request_hash, class, state, owner_token, performed, retry_allowed,
	result, coalesce(external_ref, ''), coalesce(error, ''), created_at
FROM ledger WHERE tenant = $1 AND operation = $2 AND effect_key = $3
FOR UPDATE`

// takeSQL passes a reservation to the attempt and counts one more
// performance.
const takeSQL = `/* ledger.take */
UPDATE ledger SET owner_token = $4, performed = performed + 1, retry_allowed = false,
	state = 'pending', updated_at = now()
WHERE tenant = $1 AND operation = $2 AND effect_key = $3`

// unknownOwnedSQL marks the attempt's own pending reservation unknown.
const unknownOwnedSQL = `/* ledger.unknownOwned */
UPDATE ledger SET state = 'unknown', error = $4, updated_at = now()
WHERE tenant = $1 AND operation = $2 AND effect_key = $3 AND state = 'pending' AND owner_token = $5`

// releaseSQL deletes the attempt's fresh reservation (performed once, by
// it) of an effect that was not performed.
const releaseSQL = `/* ledger.release */
DELETE FROM ledger WHERE tenant = $1 AND operation = $2 AND effect_key = $3
	AND state = 'pending' AND owner_token = $4 AND performed = 1`

const unknownSQL = `/* ledger.unknown */
UPDATE ledger SET state = 'unknown', error = $4, updated_at = now()
WHERE tenant = $1 AND operation = $2 AND effect_key = $3`

const entryColumns = `tenant, operation, effect_key, class, state, step_path, owner_token, performed,
	result, coalesce(external_ref, '') AS external_ref, coalesce(error, '') AS error,
	coalesce(note, '') AS note, created_at, updated_at, completed_at, retry_allowed, compensate`

const journalSQL = `/* ledger.journal */ SELECT ` + entryColumns + `
FROM ledger WHERE task_id = $1 AND generation = $2 ORDER BY seq`

// lastCompletedSQL reads the journal's index backwards.
const lastCompletedSQL = `/* ledger.lastCompleted */ SELECT ` + entryColumns + `
FROM ledger WHERE task_id = $1 AND generation = $2 AND operation = $3
	AND (step_path = $4 OR starts_with(step_path, $4 || '/')) AND state = 'completed'
ORDER BY seq DESC LIMIT 1`

// resolveDoneSQL is an operator's "done": the unknown effect is taken as
// performed, with a note. So is a compensation that failed for good and
// that the operator did by hand: its task's compensation then goes on, and
// a refusal's answer is not kept as what undid the effect (the attempts
// keep the error). A pending one is not taken: it may have been sent. Its
// stored result says it was resolved (Result.Resolved), so a replay served
// it can tell the operator's word from a downstream's answer.
const resolveDoneSQL = `/* ledger.resolveDone */
UPDATE ledger SET state = 'completed', note = $4,
	result = jsonb_set(coalesce(CASE WHEN state = 'failed' THEN $5::jsonb ELSE coalesce($5::jsonb, result) END, '{}'),
		'{resolved}', 'true'), error = NULL,
	completed_at = now(), updated_at = now()
WHERE tenant = $1 AND operation = $2 AND effect_key = $3
	AND (state = 'unknown' OR (state = 'failed' AND starts_with(step_path, '` + CompensationPrefix + `')))`

// resolveRetrySQL is an operator's "perform it again": the next attempt may
// perform the unknown effect once.
const resolveRetrySQL = `/* ledger.resolveRetry */
UPDATE ledger SET retry_allowed = true, note = $4, updated_at = now()
WHERE tenant = $1 AND operation = $2 AND effect_key = $3 AND state = 'unknown'`

// reopenSQL puts a failed reconcilable or keyed effect back to pending,
// its error kept in the note.
const reopenSQL = `/* ledger.reopen */
UPDATE ledger SET state = 'pending', note = $4 || coalesce(' (it had failed: ' || error || ')', ''),
	error = NULL, completed_at = NULL, retry_allowed = false, updated_at = now()
WHERE tenant = $1 AND operation = $2 AND effect_key = $3 AND state = 'failed'
	AND class IN ('reconcilable', 'keyed')`

// reopenAsSQL is reopenSQL for a failed reconcilable effect whose request
// changes with it ($5: the new request's hash).
const reopenAsSQL = `/* ledger.reopen_as */
UPDATE ledger SET state = 'pending', request_hash = $5, note = $4 || coalesce(' (it had failed: ' || error || ')', ''),
	error = NULL, completed_at = NULL, retry_allowed = false, updated_at = now()
WHERE tenant = $1 AND operation = $2 AND effect_key = $3 AND state = 'failed'
	AND class = 'reconcilable'`

// expireSQL deletes, in one bounded batch, rows of operation $1 (or, with
// $1 NULL, of every operation not in $4) whose task finished longer ago than
// the window $2, and marks those tasks (through t, the owner of the tasks
// table) so that they can no longer be replayed (I7). The task rows are
// locked: a replay that commits first takes its task out of the batch (the
// re-check sees it queued); one that comes after sees the mark. Rows of
// unfinished tasks stay, whatever their age.
//
// The record of a call that could not be built (Unbuilt) keeps the
// retention of the operation it would have been recorded under.
func expireSQL(t TaskRetention) string {
	return `/* ledger.expire */
WITH victims AS (
	SELECT l.ctid AS row, l.task_id FROM ledger l
	CROSS JOIN LATERAL (SELECT t.id FROM ` + t.FinishedFrom("l.task_id", "$2::interval") + ` FOR UPDATE OF t) t
	WHERE (` + unbuiltAs("l.operation") + ` = $1 OR ($1::text IS NULL AND NOT ` + unbuiltAs("l.operation") + ` = ANY ($4::text[])))
	  AND l.updated_at < now() - $2::interval
	LIMIT $3
),
` + t.MarkExpiredCTE("marked", "SELECT task_id FROM victims") + `
DELETE FROM ledger WHERE ctid IN (SELECT row FROM victims)`
}

// expireOrphansSQL deletes, in one bounded batch, rows older than the window
// whose task no longer exists.
func expireOrphansSQL(t TaskRetention) string {
	return `/* ledger.expireOrphans */
DELETE FROM ledger WHERE ctid = ANY (ARRAY(
	SELECT l.ctid FROM ledger l
	WHERE l.updated_at < now() - $1::interval
	  AND NOT EXISTS (SELECT 1 FROM ` + t.ExistsFrom("l.task_id") + `)
	LIMIT $2))`
}

// findSQL looks effects up for operators: by task ($2), operation ($3),
// tenant ($4), recorded before sequence number $6; empty or 0 match any
// ($1 is unused). Newest first.
const findSQL = `/* ledger.find */ SELECT ` + entryColumns + `, task_id, generation, seq
FROM ledger
WHERE $1::text = ''
  AND ` + findFilters

// findByKeySQL is findSQL with a key or key prefix ($1) of at least
// minPrefix characters, read through ledger_key_prefix_idx (migration
// 00018), whose entries are the keys' first minPrefix characters: an
// equality on them, which a generic plan can use as well as a custom one.
const findByKeySQL = `/* ledger.findByKey */ SELECT ` + entryColumns + `, task_id, generation, seq
FROM ledger
WHERE left(effect_key, 6) = left($1, 6) AND starts_with(effect_key, $1)
  AND ` + findFilters

const findFilters = `($2::bigint = 0 OR task_id = $2)
  AND ($3 = '' OR operation = $3 OR operation = '` + UnbuiltPrefix + `' || $3)
  AND ($4 = '' OR tenant = $4)
  AND ($6::bigint = 0 OR seq < $6)
ORDER BY seq DESC LIMIT $5`

// unbuiltAs is SQL for the operation a row's call is known by: its own,
// or for a call that could not be built (Unbuilt) the one it would have
// been recorded under.
func unbuiltAs(operation string) string {
	return `CASE WHEN starts_with(` + operation + `, '` + UnbuiltPrefix + `') THEN substr(` + operation + `, length('` +
		UnbuiltPrefix + `') + 1) ELSE ` + operation + ` END`
}

// unknownCountSQL counts the effects of unknown outcome (a metrics gauge).
const unknownCountSQL = `/* ledger.unknownCount */ SELECT count(*) FROM ledger WHERE state = 'unknown'`

// abandonedSQL marks unknown a pending effect of task $4 that no attempt
// will finish: its performer's lease is gone.
const abandonedSQL = `/* ledger.abandoned */
UPDATE ledger SET state = 'unknown', error = $5, updated_at = now()
WHERE tenant = $1 AND operation = $2 AND effect_key = $3 AND task_id = $4 AND state = 'pending'`
