// Package ledger is the dedupe ledger: every external effect a task intends
// — an HTTP call, an LLM completion, a Slack post, a child task — passes
// through Do with a deterministic key, so a replay, re-poll or re-claim never
// produces a second business effect (invariants I3, I4, I6).
//
// Do runs the protocol of DESIGN.md:
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
package ledger
