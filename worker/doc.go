// Package worker is agentd's worker pool: per queue a producer claims tasks
// in batches (woken by LISTEN/NOTIFY, or by polling), runs each with the
// handler of its kind, keeps its lease alive with batched heartbeats, and
// records the outcome through a batching completer. Every write is fenced by
// the package claims.
//
// A task's context is cancelled — with agentledger.ErrLeaseLost as its cause
// — when a heartbeat finds the lease taken, and also before the lease could
// run out if heartbeats cannot get through, so that work never continues past
// the point where another worker may claim the task. An operator's cancel
// ends it with agentledger.ErrCancelled as soon as the pool's LISTEN
// session hears of it (claims.CancelChannel), else at the next heartbeat.
//
// On shutdown the pool stops claiming, gives running tasks a grace period,
// then cancels the rest and releases their leases so another daemon picks
// them up at once.
package worker
