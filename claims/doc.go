// Package claims is the claim protocol: it owns the tasks and task_attempts
// tables and every statement that touches them.
//
// A worker claims runnable tasks in one statement (FOR UPDATE SKIP LOCKED),
// each claim issuing a new fencing token (the task's lease_token + 1). Every
// later write of that attempt — heartbeat, succeed, fail, release, the
// acknowledgement of a cancel — is conditioned on that token in the same
// statement; a write whose token is stale changes nothing and returns
// agentledger.ErrLeaseLost (invariant I2). Submission dedupe rests on a unique
// index and INSERT … ON CONFLICT, never on a look-up first (I6).
//
// Queries take coalesce($now, now()) so tests can pin the database clock
// through Store.Now.
package claims
