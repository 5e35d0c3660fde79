package ledger

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// keyScope is what the downstream keys of a database's effects carry
// besides the effect (migration 00042): the installation's id, from task
// id from on; id "" when its keys are unscoped.
type keyScope struct {
	id   string
	from int64
}

// scopeSQL reads the installation's key scope, when its keys are scoped.
const scopeSQL = `/* ledger.scope */
SELECT id::text, keys_scoped_from FROM installation WHERE keys_scoped_from IS NOT NULL`

// scopeOf returns the scope of the downstream keys of task id's effects:
// the installation's id from its keys_scoped_from on, "" before (or on a
// schema before 00042). Read once per Ledger: it changes only with every
// daemon stopped (agentctl scope-keys), so every process that performs
// effects agrees on it, and a task's keys are the same at every attempt.
func (l *Ledger) scopeOf(ctx context.Context, taskID int64) (string, error) {
	s := l.scope.Load()
	if s == nil {
		var id string
		var from int64
		err := l.db.QueryRow(ctx, scopeSQL).Scan(&id, &from)
		var pe *pgconn.PgError
		switch {
		case errors.As(err, &pe) && pe.Code == "42P01":
			// A schema before 00042: unscoped, and read again at the next
			// effect, as a migration may make it at any moment.
			return "", nil
		case errors.Is(err, pgx.ErrNoRows): // not scoped
			s = &keyScope{}
		case err != nil:
			return "", fmt.Errorf("ledger: reading the database's key scope: %w", err)
		default:
			s = &keyScope{id: id, from: from}
		}
		l.scope.Store(s)
	}
	if s.id == "" || taskID < s.from {
		return "", nil
	}
	return s.id, nil
}

// DownstreamKeyOf returns the downstream key the effect of operation at
// stepPath of the task's generation sends to target, as Call.DownstreamKey
// gives it: for an operator reconciling with a downstream's records, and
// for tests that look for it there.
func (l *Ledger) DownstreamKeyOf(ctx context.Context, tenant string, taskID int64, generation int32, stepPath, operation, target string) (string, error) {
	c, err := l.callOf(ctx, Attempt{Tenant: tenant, TaskID: taskID, Generation: generation}, stepPath, operation)
	if err != nil {
		return "", err
	}
	return c.DownstreamKey(target), nil
}

// callOf is the Call of attempt a's effect of operation at stepPath: its
// ledger key, and the scope of its downstream keys.
func (l *Ledger) callOf(ctx context.Context, a Attempt, stepPath, operation string) (Call, error) {
	c := Call{Key: EffectKey(a.Tenant, a.TaskID, a.Generation, stepPath, operation), Attempt: a}
	var err error
	c.scope, err = l.scopeOf(ctx, a.TaskID)
	return c, err
}
