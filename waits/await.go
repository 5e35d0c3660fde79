package waits

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/ledger"
)

// Bounds of a wait's timeout or a timer.
const (
	DefaultTimeout = 24 * time.Hour
	MaxTimeout     = 365 * 24 * time.Hour
)

// TargetKind is the deferral target of a waiting task, as metrics count
// deferrals by target kind ("wait:signal").
const TargetKind = "wait"

// Await records w unless its step's wait is recorded, and brings it as far
// as it can now: a signal that came before it is consumed, a timer whose
// time came fires, children that finished end it, a deadline that passed
// times it out. until fixes the deadline (a timer's); otherwise it is
// timeout after the wait is first recorded.
func (s *Store) Await(ctx context.Context, w Wait, until *time.Time, timeout time.Duration) (Wait, error) {
	var got Wait
	var err error
	switch w.Kind {
	case KindSignal:
		got, err = s.awaitSignal(ctx, w, timeout)
	case KindTimer, KindChildren:
		err = s.inTx(ctx, func(tx pgx.Tx) error {
			got, err = ensure(ctx, tx, w, until, timeout)
			return err
		})
	default:
		return Wait{}, fmt.Errorf("waits: unknown kind %q", w.Kind)
	}
	if err != nil || got.State != Waiting {
		return got, err
	}
	switch got.Kind {
	case KindTimer:
		if !got.Deadline.After(time.Now()) {
			return s.finish(ctx, got, json.RawMessage(fmt.Sprintf(`{"fired_at":%q,"due":%q}`,
				time.Now().UTC().Format(time.RFC3339Nano), got.Deadline.UTC().Format(time.RFC3339Nano))), "timer")
		}
		return got, nil
	case KindChildren:
		res, done, err := s.children(ctx, got)
		if err != nil {
			return Wait{}, err
		}
		if done {
			return s.finish(ctx, got, res, "children")
		}
	}
	if !got.Deadline.After(time.Now()) {
		return s.timeOut(ctx, got)
	}
	return got, nil
}

// finishSQL ends a waiting wait with its result.
var finishSQL = `/* waits.finish */
UPDATE waits SET state = 'done', result = $2, ended_at = now(), ended_by = $3
WHERE id = $1 AND state = 'waiting'
RETURNING ` + waitColumns

// finish ends w with result, unless something ended it first: then it is
// as that left it.
func (s *Store) finish(ctx context.Context, w Wait, result json.RawMessage, by string) (Wait, error) {
	return s.end(ctx, w, "ending", finishSQL, w.ID, result, by)
}

// timeOut ends w by its deadline, unless something ended it first.
func (s *Store) timeOut(ctx context.Context, w Wait) (Wait, error) {
	return s.end(ctx, w, "timing out", timeOutSQL, w.ID)
}

// end runs sql, an UPDATE of waiting wait w that returns it, under the
// waiting call's lock timeout; w as something else left it when it no
// longer waited.
func (s *Store) end(ctx context.Context, w Wait, doing, sql string, args ...any) (Wait, error) {
	var got Wait
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		got, err = scanWait(tx.QueryRow(ctx, sql, args...))
		return err
	})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return s.Get(ctx, "", w.ID)
	case errors.Is(err, ErrBusy):
		return Wait{}, err
	case err != nil:
		return Wait{}, fmt.Errorf("%s wait %d: %w", doing, w.ID, err)
	}
	return got, nil
}

// EndedError is a wait that ended without what it waited for: its
// deadline came, an operator ended it, or its task was cancelled. The
// call fails for good: a steps task fails (its compensations run when
// declared); an agent is told, and goes on.
type EndedError struct {
	Wait Wait
}

func (e *EndedError) Error() string {
	w := e.Wait
	switch w.State {
	case TimedOut:
		return fmt.Sprintf("wait %d for %s timed out: %s", w.ID, describe(w), w.EndReason)
	case Ended:
		return fmt.Sprintf("wait %d for %s was ended by %s: %s", w.ID, describe(w), w.EndedBy, w.EndReason)
	}
	return fmt.Sprintf("wait %d for %s was %s: %s", w.ID, describe(w), w.State, w.EndReason)
}

// Outcome is what a call waiting on w returns now: its result once done;
// a permanent *EndedError once ended otherwise; while it waits, a
// deferral that parks the task until w's deadline (what ends it first
// wakes it).
func Outcome(w Wait) (ledger.Result, error) {
	switch w.State {
	case Done:
		return ledger.Result{Body: w.Result}, nil
	case Waiting:
		return ledger.Result{}, &agentledger.DeferredError{Until: w.Deadline, Target: TargetKind + ":" + w.Kind,
			Reason: Describe(w), Park: true}
	}
	return ledger.Result{}, agentledger.Permanent(&EndedError{Wait: w})
}
