package waits

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentledger/agentledger"
)

// Whatever ends a wait — a signal's send, an operator's end — holds the
// wait's lock (the signal's advisory lock, the wait's row) and waits for
// the task's row to wake the task. If whatever holds that row waits in
// turn for the call looking at the wait (a transaction of the same
// process, where PostgreSQL cannot see the cycle), nothing moves. So the
// call's own statements wait for a lock at most awaitLockTimeout; past it
// the call hands its task back (ErrBusy), lets go of what it held, the
// other side finishes, and the next attempt finds the wait ended.
const awaitLockTimeout = time.Second

// busyRetry is how soon a call handed back by ErrBusy runs again.
const busyRetry = 100 * time.Millisecond

// ErrBusy is a wait whose lock something else held past awaitLockTimeout:
// it is being ended (a signal, an operator). Outcome-like: the tools turn
// it into a short deferral.
var ErrBusy = errors.New("waits: the wait is being ended by someone else")

// inTx runs fn in a transaction whose lock waits end after
// awaitLockTimeout, with a lock timeout reported as ErrBusy.
func (s *Store) inTx(ctx context.Context, fn func(pgx.Tx) error) error {
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, fmt.Sprintf(`/* waits.lock_timeout */ SET LOCAL lock_timeout = %d`, awaitLockTimeout.Milliseconds())); err != nil {
			return err
		}
		return fn(tx)
	})
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "55P03" { // lock_not_available
		return ErrBusy
	}
	return err
}

// busy is the deferral of a call whose wait was busy: queued again soon,
// not parked (what ended the wait may already have woken the task, while
// it ran: a park would wait for nothing).
func busy(kind string) error {
	return &agentledger.DeferredError{Until: time.Now().Add(busyRetry), Target: TargetKind + ":" + kind,
		Reason: "its wait was being ended (a signal, an operator) as it looked; it looks again"}
}
