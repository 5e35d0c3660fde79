package webhooks

import "github.com/agentledger/agentledger/internal/syncwait"

// The inbox table's SQL. The inbox is owned here; the retention janitor
// deletes old rows by received_at on its own.

// insertInboxSQL claims a delivery id, and the hash $3 of its body, for a
// source. No row inserted means the delivery id or the body was accepted
// before (I6: the unique indexes decide, never a look-up first).
const insertInboxSQL = `/* webhooks.insertInbox */
INSERT INTO inbox (source, delivery_id, body_hash) VALUES ($1, $2, $3)
ON CONFLICT DO NOTHING`

// inboxTaskSQL reads the earlier delivery that turned this one away: the
// one with its delivery id if there is one, else the one with its body. It
// runs as its own statement after insertInboxSQL, so that under READ
// COMMITTED it sees the row of a concurrent delivery that insertInboxSQL
// waited for. The duplicate it answers is acknowledged, and the sender
// stops: with synchronous standbys not before they have the earlier
// delivery (syncwait.Durable).
const inboxTaskSQL = `/* webhooks.inboxTask */
SELECT delivery_id, body_hash, task_id FROM inbox
WHERE source = $1 AND (delivery_id = $2 OR body_hash = $3) AND ` + syncwait.Durable + `
ORDER BY delivery_id = $2 DESC LIMIT 1`

// setInboxTaskSQL records the task a delivery became.
const setInboxTaskSQL = `/* webhooks.setInboxTask */
UPDATE inbox SET task_id = $3 WHERE source = $1 AND delivery_id = $2`

// expireInboxSQL deletes, in one bounded batch, deliveries received before
// now - $1: a sender's redelivery after that creates a new task, so the
// window must outlast the senders' own (GitHub lets deliveries of the past
// three days be redelivered).
const expireInboxSQL = `/* webhooks.expireInbox */
DELETE FROM inbox WHERE ctid = ANY (ARRAY(
	SELECT ctid FROM inbox WHERE received_at < now() - $1::interval LIMIT $2))`
