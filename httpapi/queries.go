package httpapi

import "github.com/agentledger/agentledger/internal/syncwait"

// All SQL of the idempotency_keys table lives here. A record is keyed by
// (tenant, operation, key). While in flight, locked_until is both the lock's
// end and its fencing token: every holder sets a new, later value (a
// takeover happens only after the old value has passed), and every write a
// holder makes is conditioned on the value it set.

// reserveKeySQL claims a key for a new request. ON CONFLICT decides (I6):
// no row back means the key has a record already.
const reserveKeySQL = `/* httpapi.reserveKey */
INSERT INTO idempotency_keys (tenant, operation, key, fingerprint, state, locked_until)
VALUES ($1, $2, $3, $4, 'in_flight', now() + $5::interval)
ON CONFLICT (tenant, operation, key) DO NOTHING
RETURNING locked_until, created_at`

// getKeySQL reads the record that made a reservation fail. A completed
// one's answer is replayed, acknowledging what it read: with synchronous
// standbys, not before they have it (syncwait.Durable), since the request
// that stored it may have had its commit's wait for them cut short.
const getKeySQL = `/* httpapi.getKey */
SELECT fingerprint, state, coalesce(locked_until > now(), false), status, headers, body
FROM idempotency_keys
WHERE tenant = $1 AND operation = $2 AND key = $3 AND ` + syncwait.Durable

// takeOverKeySQL claims an in-flight record whose lock ran out: its request
// crashed, timed out or failed (a released record's lock ends at once).
// Only one of several requests racing for it gets a row back.
const takeOverKeySQL = `/* httpapi.takeOverKey */
UPDATE idempotency_keys SET locked_until = now() + $5::interval
WHERE tenant = $1 AND operation = $2 AND key = $3 AND fingerprint = $4
  AND state = 'in_flight' AND (locked_until IS NULL OR locked_until <= now())
RETURNING locked_until, created_at`

// completeKeySQL stores the answer, fenced on the holder's lock.
const completeKeySQL = `/* httpapi.completeKey */
UPDATE idempotency_keys SET state = 'completed', status = $5, headers = $6, body = $7,
	completed_at = now(), locked_until = NULL
WHERE tenant = $1 AND operation = $2 AND key = $3 AND state = 'in_flight' AND locked_until = $4`

// releaseKeySQL ends the holder's lock now, keeping the record in flight,
// so that the next request with the key takes it over at once (fenced on
// the holder's lock).
const releaseKeySQL = `/* httpapi.releaseKey */
UPDATE idempotency_keys SET locked_until = now()
WHERE tenant = $1 AND operation = $2 AND key = $3 AND state = 'in_flight' AND locked_until = $4`

// forgetKeySQL deletes the holder's record (fenced on its lock): its
// request was refused as invalid inside the action, which stored nothing,
// so the key is free for the corrected request, as after a refusal before
// the action.
const forgetKeySQL = `/* httpapi.forgetKey */
DELETE FROM idempotency_keys
WHERE tenant = $1 AND operation = $2 AND key = $3 AND state = 'in_flight' AND locked_until = $4`

// expireKeysSQL deletes, in one bounded batch, records created before
// now - $1 whose request is not running: completed ones, and in-flight ones
// whose lock ran out (their request crashed or failed, and the client did
// not retry within the window). A retry after that is a new request.
const expireKeysSQL = `/* httpapi.expireKeys */
DELETE FROM idempotency_keys WHERE ctid = ANY (ARRAY(
	SELECT ctid FROM idempotency_keys
	WHERE created_at < now() - $1::interval
	  AND (state = 'completed' OR locked_until IS NULL OR locked_until <= now())
	LIMIT $2))`
