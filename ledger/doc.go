// Package ledger is the dedupe ledger: every external effect a task intends
// — an HTTP call, an LLM completion, a Slack post, a child task — passes
// through Do with a deterministic key, so a replay, re-poll or re-claim never
// produces a second business effect (invariants I3, I4, I6).
//
// Do runs the protocol of docs/design.md for unsafe, reconcilable and
// local effects:
//
//  1. Reserve, in one transaction that also checks the attempt's fencing
//     token: INSERT … ON CONFLICT DO NOTHING, then lock the row. A different
//     request hash is ErrKeyReuse; a completed or failed row returns its
//     stored result and nothing runs; a pending row left by an earlier
//     attempt is an effect of unknown outcome, recovered by its class.
//  2. Perform the effect outside any transaction, handing it the key.
//  3. Record the result, fenced on the row's owner and the task's token.
//
// A local effect (a row in this database, such as a child task) is performed
// inside the reservation transaction instead, so it commits exactly once with
// its ledger row and is never of unknown outcome.
//
// Pure and keyed effects skip the reservation commit: their unknown outcome
// is recovered by performing again with the same key, which a reservation
// row would not change. They start with a read (served if finished), perform,
// and record with one fenced INSERT … ON CONFLICT, where the first
// performance that lands stands: one commit per effect on the happy path.
// Unsafe and reconcilable effects must be reserved first, since their
// recovery depends on knowing that an attempt may have performed them.
//
// Results come back in their stored form (jsonb normalises JSON) on the
// first run as on every replay, so anything built from a result — the next
// step's arguments, the next model request — is the same each time.
package ledger
