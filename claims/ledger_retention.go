package claims

// LedgerRetention is the part the tasks table plays in the ledger's expiry
// (ledger.Expire): which tasks' effects may be forgotten, and the mark that
// keeps such a task from being replayed (I7). The ledger composes these
// fragments into its own statement, so that the mark and the deletion
// commit together. It satisfies ledger.TaskRetention.
type LedgerRetention struct{}

// FinishedFrom selects the task row id while the task has finished longer
// than window ago.
func (LedgerRetention) FinishedFrom(id, window string) string {
	return `tasks t WHERE t.id = ` + id + ` AND t.state IN ('succeeded', 'dead', 'cancelled', 'compensated')
		AND t.finished_at < now() - ` + window
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
