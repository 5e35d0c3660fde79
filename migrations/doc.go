// Package migrations holds agentledger's schema as numbered, embedded SQL
// files (NNNNN_name.sql, each with a goose Up and Down section) and applies
// them with github.com/pressly/goose/v3 under a PostgreSQL advisory lock, so
// any number of daemons may start at once. Applied versions are recorded in
// the agentledger_migrations table.
//
// # Online
//
// A daemon applies pending migrations when it starts, while others still
// run, so an Up section must not stop reads or writes of a table an
// earlier migration created (tasks, task_attempts, ledger, outbox, inbox
// and idempotency_keys hold millions of rows) for longer than a catalog
// change. TestMigrationsAreOnlineSafe checks these rules:
//
//   - An index on such a table is built with CREATE INDEX CONCURRENTLY,
//     preceded by DROP INDEX CONCURRENTLY IF EXISTS of the same name (a
//     build cut off leaves an invalid index behind). To replace an index,
//     build the new one under another name, drop the old one
//     concurrently and rename the new one (ALTER INDEX … RENAME takes no
//     lock that stops writes).
//   - A CHECK or FOREIGN KEY constraint is added NOT VALID (a catalog
//     change; rows written from then on are checked) and validated by a
//     separate ALTER TABLE … VALIDATE CONSTRAINT, which reads the table
//     while writes go on. A UNIQUE or PRIMARY KEY constraint is an index
//     built concurrently, then ADD CONSTRAINT … USING INDEX.
//   - Nothing changes a column's type, sets NOT NULL, or otherwise
//     rewrites or rescans a table under an ACCESS EXCLUSIVE lock. ADD
//     COLUMN without a default, or with a constant one, is a catalog
//     change.
//   - A file that builds concurrently, validates, or updates or deletes
//     rows of such a table is marked "-- +goose NO TRANSACTION": in a
//     transaction every lock is held until the whole migration commits
//     (and CREATE INDEX CONCURRENTLY cannot run at all). Each statement of
//     such a file then commits on its own, so each must be safe to run
//     again if the migration stops half-way (IF [NOT] EXISTS, DROP
//     CONSTRAINT IF EXISTS before ADD CONSTRAINT).
//
// Even a catalog change takes an ACCESS EXCLUSIVE lock for an instant, and
// waits for it behind any transaction still reading or writing the table;
// requests queue behind the waiting migration meanwhile. The daemons'
// transactions are short, but a long report or an idle-in-transaction
// session is not: end those before an upgrade. A concurrent build also
// waits for every transaction older than it in the database, then scans
// the table twice; it slows writes, it does not stop them.
//
// Down sections are for development and are not held to these rules. A
// down section that may refuse (00042: while tasks whose keys carry the
// database's identity remain) marks its check "-- +agentledger DownGuard"
// (GuardMark): a DO block that only raises, run for every migration a down
// is to roll back before any is, so that a refusal leaves the schema whole
// (unless what it checks changes before the down reaches it).
package migrations
