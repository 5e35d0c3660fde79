package claims

// LedgerRetention is the part the tasks table plays in the ledger's expiry
// (ledger.Expire): which tasks' effects may be forgotten, and the mark that
// keeps such a task from being replayed (I7). The ledger composes these
// fragments into its own statement, so that the mark and the deletion
// commit together. It satisfies ledger.TaskRetention.
type LedgerRetention struct{}

// FinishedFrom selects the task row id while the task has finished longer
// than window ago and has no notification left to deliver (unsettled).
func (LedgerRetention) FinishedFrom(id, window string) string {
	return `tasks t WHERE t.id = ` + id + ` AND t.state IN ('succeeded', 'dead', 'cancelled', 'compensated')
		AND t.finished_at < now() - ` + window + `
		AND NOT EXISTS (` + unsettledEvents("t.id", window) + `)`
}

// unsettledEvents selects the task id's notification events failed (to
// be redelivered by hand, until the outbox sweep deletes them), or still
// to be delivered and changed within window. While one is, the task and
// its ledger rows stay: a delivery whose post's outcome is unknown reads
// the channel for it through its ledger row, and without the row it would
// post again. A pending event a window old holds nothing: retried, it
// would have changed since (its next try), and no dispatcher runs one
// untouched for that long; so nothing is held for ever.
func unsettledEvents(id, window string) string {
	return `SELECT FROM outbox o WHERE o.task_id = ` + id + ` AND (o.state = 'failed'
		OR o.state = 'pending' AND o.updated_at > now() - ` + window + `)`
}

// MarkExpiredCTE is a CTE named name that marks the tasks whose ids the
// query ids selects as having lost ledger rows.
func (LedgerRetention) MarkExpiredCTE(name, ids string) string {
	return name + ` AS (
	UPDATE tasks SET ledger_expired_at = now()
	WHERE id IN (` + ids + `) AND ledger_expired_at IS NULL
)`
}

// ExistsFrom selects the task row id if the task still exists.
func (LedgerRetention) ExistsFrom(id string) string { return `tasks t WHERE t.id = ` + id }
