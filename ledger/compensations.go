package ledger

import "strings"

// Fragments on the ledger's rows that the owner of the tasks table
// composes into its state changes, which must commit with them: when a
// task's forward path ends (package claims) and when an operator replays a
// parked compensation phase (package operator). They live here, with the
// table they read and write, as the tasks table's fences live with claims.

// UndoableSQL is SQL true when the task row aliased t has, in its
// generation, an effect to compensate: one whose step declared a
// compensation (Effect.Compensate), that did not fail and was not resolved
// as never performed — completed, or of unknown outcome (the compensation
// phase parks on those). saga.ToUndo is the same test in Go. It reads the
// ledger's journal index.
const UndoableSQL = `EXISTS (SELECT 1 FROM ledger l WHERE l.task_id = t.id AND l.generation = t.generation
		AND l.compensate IS NOT NULL AND l.state <> 'failed' AND NOT (l.state = 'unknown' AND l.retry_allowed))`

// ReopenCompensationsCTE is a CTE named reopen for a replay whose CTE upd
// returns the replayed tasks (id, generation, undoing): a parked
// compensation phase goes on, and the compensations that failed for good
// are tried once more under their keys — an operator replays once the
// cause is fixed (a closed card, a wrong token). Only keyed and
// reconcilable ones reopen, as Reopen does: an unsafe call performed
// blindly again could happen twice.
const ReopenCompensationsCTE = `reopen AS (
	UPDATE ledger l SET state = 'pending',
		note = 'tried again by a replay of the compensation' || coalesce(' (it had failed: ' || l.error || ')', ''),
		error = NULL, completed_at = NULL, retry_allowed = false, updated_at = now()
	FROM upd
	WHERE upd.undoing AND l.task_id = upd.id AND l.generation = upd.generation
		AND starts_with(l.step_path, '` + CompensationPrefix + `') AND l.state = 'failed' AND l.class IN ('keyed', 'reconcilable')
)`

// RereadCTE is a CTE named reread for a replay whose CTE upd returns the
// replayed tasks (id, generation, undoing): on the forward path, the
// generation's last effect (Reread), when it failed and changed nothing
// (class pure: a read answered with an error, a wait that timed out or
// whose children failed), is tried again — back to pending, its error
// kept in the note, as Reopen does — since performing it again cannot
// repeat anything, and what failed it may have changed (a child re-run, a
// late signal kept, a resource created). Only the last: an effect after
// it was built from its failure (an agent told of it, a Go kind that took
// the other branch), and a replay must serve what the task did. A failed
// effect that changed something stays served. It returns the row it
// reopened (task_id, generation, step_path).
const RereadCTE = `reread AS (
	UPDATE ledger l SET state = 'pending',
		note = 'tried again by a replay' || coalesce(' (it had failed: ' || l.error || ')', ''),
		error = NULL, completed_at = NULL, retry_allowed = false, updated_at = now()
	FROM upd
	WHERE NOT upd.undoing AND l.task_id = upd.id AND l.generation = upd.generation
		AND l.state = 'failed' AND l.class = 'pure' AND NOT starts_with(l.step_path, '` + CompensationPrefix + `')
		AND NOT EXISTS (SELECT FROM ledger later WHERE later.task_id = l.task_id AND later.generation = l.generation
			AND later.seq > l.seq AND NOT starts_with(later.step_path, '` + CompensationPrefix + `')
			AND NOT starts_with(later.step_path, '` + NoticePrefix + `'))
	RETURNING l.task_id, l.generation, l.step_path
)`

// NoticePrefix begins the step paths of the posts made about a task
// (package notify's rules, approval requests' posts), not by it: no part of
// its path.
const NoticePrefix = "notify/"

// Reread is the index in journal (a generation's rows in their order, as
// Journal reads them) of the effect a replay of the forward path tries
// again (RereadCTE): the last forward effect, when it failed and is pure
// (not the record of a compensation that could not be built); -1 when
// there is none.
func Reread(journal []Entry) int {
	for i := len(journal) - 1; i >= 0; i-- {
		e := journal[i]
		switch {
		case strings.HasPrefix(e.StepPath, CompensationPrefix), strings.HasPrefix(e.StepPath, NoticePrefix):
			continue
		case e.State == StateFailed && e.Class == Pure:
			return i
		}
		return -1
	}
	return -1
}

// WroteSQL is SQL true when the attempt of task id's generation whose
// lease token is token wrote a row of the journal: it performed, or
// began to perform, an effect (claims.deferSQL records such an attempt,
// whatever came before it). Its arguments are SQL expressions; it reads
// the journal index.
func WroteSQL(id, generation, token string) string {
	return `EXISTS (SELECT FROM ledger l WHERE l.task_id = ` + id + ` AND l.generation = ` + generation +
		` AND l.owner_token = ` + token + `)`
}
