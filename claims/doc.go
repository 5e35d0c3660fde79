// Package claims is the claim protocol: it owns the tasks and task_attempts
// tables and every statement that touches them.
//
// A worker claims runnable tasks in one statement (FOR UPDATE SKIP LOCKED),
// each claim issuing a new fencing token (above the task's last one and at
// least the claim's clock in µs, so that a claim whose asynchronous commit
// was lost never has its token issued again: queries.go, asyncCommit). Every
// later write of that attempt — heartbeat, succeed, fail, release, the
// acknowledgement of a cancel — is conditioned on that token in the same
// statement; a write whose token is stale changes nothing and returns
// agentledger.ErrLeaseLost (invariant I2). The claim shares its batch
// among the tenants that have due tasks, by the weights and running caps of
// package tenants' tenant_shares (claimDue in queries.go says how): a
// tenant's backlog never holds another tenant's task back by more than a
// claim round. Submission dedupe rests on a unique
// index and INSERT … ON CONFLICT, never on a look-up first (I6).
//
// An attempt is recorded in task_attempts when it ends, except a success:
// the succeeded row already holds its token, worker and times, and a
// trigger writes its record only when the row moves on (a replay, a
// compensation). Readers read the view attempt_records, which holds both.
//
// Queries take coalesce($now, now()) so tests can pin the database clock
// through Store.Now.
package claims
