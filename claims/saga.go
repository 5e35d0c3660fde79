package claims

import "github.com/agentledger/agentledger/ledger"

// Sagas in the claim protocol. A task whose forward path ends — dead, or
// cancelled by an operator — while its generation has an effect to undo
// (undoable) enters its compensation phase instead: state
// compensating (claimable like retrying), compensation set to why, its
// attempts counted afresh, a pending cancel request cleared (the
// compensation is not cancelled). A run in that phase undoes; it ends
// compensated, or needs_attention when a compensation fails for good or
// its attempts are used up, and a replay from there continues it.
//
// The fragments below are SQL on the tasks row aliased t, for the SET
// lists of the statements that end an attempt. Their ledger look-up runs
// only for a row whose forward path ends: a retry or a success never pays
// for it. It is repeated per SET column of such a row (an index probe
// each) rather than computed once beforehand, which would read every
// failing row of the batch a second time.

// undoable: t's generation has an effect to compensate (the ledger's
// fragment, ledger.UndoableSQL).
const undoable = ledger.UndoableSQL

// enters is true when t's forward path ends (ends, a SQL condition) with
// something to undo.
func enters(ends string) string {
	return `(t.compensation IS NULL AND (` + ends + `) AND ` + undoable + `)`
}

// enterSet is the SET list that starts t's compensation phase when cond
// holds (cond: enters(…); why: its reason, SQL text) and keeps the row's
// values otherwise.
func enterSet(cond, why string) string {
	return `compensation = CASE WHEN ` + cond + ` THEN ` + why + ` ELSE t.compensation END,
		attempt = CASE WHEN ` + cond + ` THEN 0 ELSE t.attempt END,
		cancel_requested_at = CASE WHEN ` + cond + ` THEN NULL ELSE t.cancel_requested_at END`
}

// ClosedAttemptNumber reads, in a RETURNING, the number of the attempt a
// statement closed: a task that entered its compensation phase had its
// count reset to 0, so its closed attempt's number is read from the row as
// it was before the statement.
const ClosedAttemptNumber = `CASE WHEN t.state = 'compensating' AND t.attempt = 0
		THEN (SELECT p.attempt FROM tasks p WHERE p.id = t.id) ELSE t.attempt END AS attempt,
		t.state = 'compensating' AND t.attempt = 0 AS entered`

// queuedState is the state a task goes back to without a failure (a
// release, a deferral): queued, or compensating in that phase.
const queuedState = `CASE WHEN t.compensation IS NULL THEN 'queued' ELSE 'compensating' END`
