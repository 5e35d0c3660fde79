// Package waits lets a task wait durably — for a signal with a correlation
// key, a timer, or its child tasks — without holding a lease, a worker or
// an attempt.
//
// A wait is a tool call (wait_for_signal, wait_timer, wait_for_children),
// so steps tasks, agents and Go kinds (saga.Call) wait the same way, and
// its result is recorded in the ledger like any effect's: a replay is
// served from the journal and waits for nothing; a re-run, a new
// generation, waits anew. The call records its wait (table waits, one per
// task, generation and step) and either finds it ended — the signal came,
// the timer fired, the children finished — or parks the task (state
// waiting, run_at its deadline). Whatever ends a wait wakes its task in the
// same statement (claims.WakeTasks); the deadline wakes it otherwise
// (claims.WakeDue), and the call then reports the timeout.
//
// A signal and its wait meet under one advisory lock per (tenant, name,
// key): whichever comes second finds the first, so a signal racing its
// wait is consumed exactly once, by the oldest waiter, or kept (until its
// expiry) for the wait to come.
package waits
