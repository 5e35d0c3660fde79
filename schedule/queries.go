package schedule

// All SQL of the schedules table lives here. $now is always
// coalesce($n::timestamptz, now()) so tests can pin the clock; statements
// that need the time in Go return it, so that every daemon reckons slots
// by the database's clock, not its host's.

const columns = `name, tenant, spec, timezone, queue, kind, payload, priority, max_attempts, missed,
	NOT enabled, next_fire_at, last_fire_at, created_at, updated_at`

const nowSQL = `/* schedule.now */ SELECT coalesce($1::timestamptz, now())`

// insertSQL adds a schedule unless its name is taken (no row returned).
const insertSQL = `/* schedule.insert */
INSERT INTO schedules (name, tenant, spec, timezone, queue, kind, payload, priority, max_attempts, missed,
	enabled, next_fire_at, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8, $9, $10, $11, $12,
	coalesce($13::timestamptz, now()), coalesce($13::timestamptz, now()))
ON CONFLICT (name) DO NOTHING
RETURNING ` + columns

const listSQL = `/* schedule.list */ SELECT ` + columns + ` FROM schedules ORDER BY name`

const getSQL = `/* schedule.get */ SELECT ` + columns + ` FROM schedules WHERE name = $1`

// pauseSQL disables a schedule; it has no next fire until resumed.
const pauseSQL = `/* schedule.pause */
UPDATE schedules SET enabled = false, next_fire_at = NULL,
	updated_at = CASE WHEN enabled THEN coalesce($2::timestamptz, now()) ELSE updated_at END
WHERE name = $1
RETURNING ` + columns

// lockSQL locks one schedule and reads the clock, for Resume.
const lockSQL = `/* schedule.lock */ SELECT ` + columns + `, coalesce($2::timestamptz, now()) FROM schedules WHERE name = $1 FOR UPDATE`

const resumeSQL = `/* schedule.resume */
UPDATE schedules SET enabled = true, next_fire_at = $2, updated_at = $3
WHERE name = $1
RETURNING ` + columns

const deleteSQL = `/* schedule.delete */ DELETE FROM schedules WHERE name = $1`

// dueSQL lists up to $2 schedules due now, earliest first (from the
// partial index schedules_due_idx).
const dueSQL = `/* schedule.due */
SELECT name FROM schedules
WHERE enabled AND next_fire_at <= coalesce($1::timestamptz, now())
ORDER BY next_fire_at, name
LIMIT $2`

// lockDueSQL locks schedule $1 if it is still due, and reads the clock.
// A row another daemon holds is skipped; one it fired meanwhile is
// re-checked on its new version (READ COMMITTED) and is no longer due.
const lockDueSQL = `/* schedule.lockDue */
SELECT ` + columns + `, coalesce($2::timestamptz, now()) FROM schedules
WHERE name = $1 AND enabled AND next_fire_at <= coalesce($2::timestamptz, now())
FOR UPDATE SKIP LOCKED`

// firedSQL moves a locked schedule past the slots it handled; $3, the
// latest slot it enqueued, is NULL when it enqueued none.
const firedSQL = `/* schedule.fired */
UPDATE schedules SET next_fire_at = $2, last_fire_at = coalesce($3, last_fire_at), updated_at = $4
WHERE name = $1`

// nextFireSQL is the earliest next fire of every enabled schedule, and the
// clock.
const nextFireSQL = `/* schedule.nextFire */ SELECT min(next_fire_at), coalesce($1::timestamptz, now()) FROM schedules WHERE enabled`
