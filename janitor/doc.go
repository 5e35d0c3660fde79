// Package janitor deletes what agentledger no longer needs, in small
// batches, one daemon at a time.
//
// It knows no tables: each Sweep is a package's own bounded delete (the
// ledger's Expire, claims' DeleteFinished, the outbox's DeleteSettled, the
// webhook inbox, the API's idempotency keys) with its retention window. A
// run holds the janitor's lease in the leaders table (a row, which works
// through a transaction-pooling PgBouncer, unlike a session advisory lock);
// a daemon that does not get it skips the run, so any number of daemons may
// run a janitor. Each batch is
// its own short statement, so no long locks are held, and a sweep never
// deletes what a replay of an unfinished task needs (I7): that is each
// sweep's contract, tested in its package and here.
package janitor
