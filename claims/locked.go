package claims

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// LockTaskSQL takes task $1's row lock (restricted to tenant $2 unless
// empty) ahead of an operator's statement: the statement LockedRow sends
// first.
const LockTaskSQL = `/* claims.lockTask */
SELECT 1 FROM tasks WHERE id = $1 AND ($2 = '' OR tenant = $2) FOR UPDATE`

// LockedRow runs the single-row statement sql on task id after taking the
// task's row lock in an earlier statement of the same transaction, and
// scans its row into dest: how an operator's action (package operator)
// changes a task that workers may be claiming or finishing at that moment.
//
// An operator's statement that locks the row in a CTE and writes it in
// another is not safe on its own under READ COMMITTED: the write starts
// from the row as the statement's snapshot saw it, and when a worker
// claimed or finished the task meanwhile, the CTE's values and the row
// written are different versions of the task (a requeue or a cancel then
// wrote a queued row that kept a lease, TestOperatorsRaceWorkers). Once
// the lock is held, the next statement's snapshot sees the newest version
// and no worker can change it until the transaction ends.
func (s *Store) LockedRow(ctx context.Context, id int64, tenant, sql string, args []any, dest ...any) error {
	return pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, LockTaskSQL, id, tenant); err != nil {
			return err
		}
		return tx.QueryRow(ctx, sql, args...).Scan(dest...)
	})
}
