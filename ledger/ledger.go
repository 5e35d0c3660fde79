package ledger

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/tracing"
)

// DB is what the ledger needs of a database: a pool, a connection or a
// transaction (pgx's own types satisfy it).
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Ledger runs effects through the ledger table.
type Ledger struct {
	db DB

	recorders sync.Map                 // reflect.Type of a Fence → *recorder: keyed records, batched (batch.go)
	scope     atomic.Pointer[keyScope] // read at the first effect (scope.go)

	// Observe, when set, is told how each Do ended, for metrics: outcome
	// is "performed", "served" (from the ledger, nothing performed),
	// "failed" (a permanent failure, recorded), "unknown" (an effect that
	// needs an operator), "deferred" (not admitted: waits for a limit,
	// nothing recorded), "lease_lost" or "error" (transient).
	Observe func(operation string, class Class, outcome string)
}

// New returns a Ledger over db.
func New(db DB) *Ledger { return &Ledger{db: db} }

// row is a locked ledger row as the decision needs it.
type row struct {
	hash         []byte
	class        Class
	state        State
	owner        int64
	performed    int32
	retryAllowed bool
	result       []byte
	externalRef  string
	err          string
}

// Do performs effect e for attempt a at most once per key; see the package
// documentation for the protocol. It returns the effect's result — stored,
// with Replayed set, when the ledger already had it. Errors: ErrKeyReuse
// (agentledger) when the key comes with another request; ErrLeaseLost when
// the attempt's token is stale (nothing was performed, or a performed
// effect could not be recorded and will be recovered by its class);
// ErrNeedsAttention for an unknown unsafe effect; *FailedError wrapped as
// permanent for a stored failure; the performer's transient error otherwise.
func (l *Ledger) Do(ctx context.Context, a Attempt, e Effect) (Result, error) {
	ctx, span := tracing.Start(ctx, "agentledger.effect")
	res, err := l.do(ctx, a, e)
	if l.Observe != nil {
		l.Observe(e.Operation, e.Class, outcomeOf(res, err))
	}
	if span.IsRecording() {
		span.SetName("agentledger.effect " + e.Operation)
		traceEffect(span, a, e, outcomeOf(res, err), err)
	}
	span.End()
	return res, err
}

// outcomeOf names how Do ended, for Observe.
func outcomeOf(res Result, err error) string {
	var perm *agentledger.PermanentError
	var waits *agentledger.DeferredError
	switch {
	case res.Replayed:
		return "served"
	case err == nil:
		return "performed"
	case errors.Is(err, agentledger.ErrNeedsAttention):
		return "unknown"
	case errors.Is(err, agentledger.ErrLeaseLost):
		return "lease_lost"
	case errors.As(err, &waits):
		return "deferred"
	case errors.As(err, &perm):
		return "failed"
	}
	return "error"
}

func (l *Ledger) do(ctx context.Context, a Attempt, e Effect) (Result, error) {
	if ctx.Err() != nil {
		return Result{}, context.Cause(ctx) // cancelled before the effect began: nothing sent
	}
	if err := e.validate(); err != nil {
		// The tool built it so (a mistake in its code): every attempt
		// would build it alike.
		return Result{}, agentledger.Permanent(fmt.Errorf("ledger: an effect built wrong (operation %q at %s): %w", e.Operation, e.StepPath, err))
	}
	if len(e.Request) == 0 {
		e.Request = json.RawMessage(`null`)
	}
	hash, err := RequestHash(e.Request)
	if err != nil {
		return Result{}, agentledger.Invalid("request", "%v", err)
	}
	call, err := l.callOf(ctx, a, e.StepPath, e.Operation)
	if err != nil {
		return Result{}, err
	}
	pk := []any{a.Tenant, e.Operation, call.Key}
	q := queriesOf(a.Fence)

	switch {
	case (e.Class == Pure || e.Class == Keyed) && e.Compensate == nil:
		if res, done, err := l.doUnreserved(ctx, pk, a, call, e, hash); done {
			return res, err
		}
		// A pending or unknown row: decided under its lock below, once
		// admitted.
		if e.Admit != nil {
			release, err := e.Admit(ctx)
			if err != nil {
				return Result{}, err
			}
			defer releaseOf(release)()
		}
	case e.Class != Local && e.Admit != nil:
		// Admitted before anything is reserved, so a refusal leaves no
		// row behind; a finished effect is served without admission.
		if res, _, done, err := l.lookup(ctx, pk, a, call, e, hash); done {
			return res, err
		}
		release, err := e.Admit(ctx)
		if err != nil {
			return Result{}, err
		}
		defer releaseOf(release)()
	}
	if err := agentledger.CancelRequested(ctx); err != nil {
		return Result{}, err // cancelled while admitted: nothing reserved, nothing sent
	}

	var (
		res       Result
		perform   bool
		reconcile bool
		afterErr  error // returned once the transaction has committed
	)
	if e.Class != Local {
		var fenced, fresh bool
		var st *State
		var r row
		err := l.db.QueryRow(ctx, q.reserveFast, a.Tenant, e.Operation, call.Key, hash, string(e.Class),
			a.TaskID, a.Generation, e.StepPath, a.token(), a.fenceID(), nullJSON(e.Compensate)).Scan(&fenced, &fresh, &st, &r.hash, &r.result, &r.externalRef, &r.err)
		if err != nil {
			return Result{}, fmt.Errorf("ledger: reserving effect %s: %w", short(call.Key), err)
		}
		switch {
		case !fenced:
			return Result{}, agentledger.Errorf(agentledger.CodeLeaseLost, "task %d: its lease (token %d) was lost: another worker holds it, or it expired", a.TaskID, a.token())
		case fresh:
			return l.perform(ctx, pk, a, call, e, false)
		case st != nil && (*st == StateCompleted || *st == StateFailed):
			r.state = *st
			return served(r, hash, call, e)
		}
	}
	err = pgx.BeginFunc(ctx, l.db, func(tx pgx.Tx) error {
		var one int
		if err := tx.QueryRow(ctx, q.fence, a.fenceID(), a.token()).Scan(&one); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return agentledger.Errorf(agentledger.CodeLeaseLost, "task %d: its lease (token %d) was lost: another worker holds it, or it expired", a.TaskID, a.token())
			}
			return err
		}
		tag, err := tx.Exec(ctx, reserveSQL, a.Tenant, e.Operation, call.Key, hash, string(e.Class),
			a.TaskID, a.Generation, e.StepPath, a.token(), nullJSON(e.Compensate))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 1 { // a fresh reservation, ours
			if e.Class == Local {
				res, err = l.performLocal(ctx, tx, call, e, pk)
				return err
			}
			perform = true
			return nil
		}
		var r row
		if err := tx.QueryRow(ctx, lockSQL, pk...).Scan(&r.hash, &r.class, &r.state, &r.owner, &r.performed,
			&r.retryAllowed, &r.result, &r.externalRef, &r.err, &call.ReservedAt); err != nil {
			return err
		}
		if !bytes.Equal(r.hash, hash) {
			return fmt.Errorf("effect %s at %s: %w", short(call.Key), e.StepPath, agentledger.ErrKeyReuse)
		}
		switch r.state {
		case StateCompleted, StateFailed:
			res, err = served(r, hash, call, e)
			return err
		case StateUnknown:
			if !r.retryAllowed {
				return fmt.Errorf("effect %s at %s: %w", short(call.Key), e.StepPath, ErrNeedsAttention)
			}
		case StatePending:
			// A pending row means an earlier call — another attempt's, or
			// this attempt's that failed transiently or is running
			// concurrently — may have performed the effect. The stored
			// class decides what that means.
			switch r.class {
			case Unsafe:
				if !r.retryAllowed {
					if _, err := tx.Exec(ctx, unknownSQL, append(pk, fmt.Sprintf(
						"an attempt (token %d) may have performed it without recording the outcome", r.owner))...); err != nil {
						return err
					}
					// The transition to unknown must stick: commit, then fail.
					afterErr = fmt.Errorf("effect %s at %s: %w", short(call.Key), e.StepPath, ErrNeedsAttention)
					return nil
				}
			case Reconcilable:
				reconcile = true
			}
		}
		if e.Class == Local {
			// A local effect commits with its row, so a pending local row
			// can only be one whose transaction is this one.
			return fmt.Errorf("ledger: local effect %s is %s: corrupt ledger row", short(call.Key), r.state)
		}
		if _, err := tx.Exec(ctx, takeSQL, append(pk, a.token())...); err != nil {
			return err
		}
		perform = true
		return nil
	})
	if err == nil && afterErr != nil {
		return Result{}, afterErr
	}
	if err != nil || !perform {
		return res, err
	}
	return l.perform(ctx, pk, a, call, e, reconcile)
}

// releaseOf is release, or a function that does nothing.
func releaseOf(release func()) func() {
	if release == nil {
		return func() {}
	}
	return release
}

// doUnreserved runs a pure or keyed effect without a reservation commit. An
// unknown outcome of these classes is recovered by performing again with the
// same key — which a reservation row would not change — so the effect costs
// one commit: its record, an INSERT … ON CONFLICT fenced on the lease, where
// a concurrent performance that landed first stands. done is false when the
// effect has a pending or unknown row, which the locking path decides.
func (l *Ledger) doUnreserved(ctx context.Context, pk []any, a Attempt, call Call, e Effect, hash []byte) (Result, bool, error) {
	// On its generation's first claim an attempt has no row to find: a
	// keyed effect goes straight to its call, and the fenced insert after
	// it decides as it does for any performance (a lost lease records
	// nothing; a row that landed first stands). A pure one still looks,
	// since performing it again is not free (a model completion); so does
	// a key the attempt has sent already (a place used twice).
	if !a.First || e.Class != Keyed || !unlooked(ctx, call.Key) {
		res, st, done, err := l.lookup(ctx, pk, a, call, e, hash)
		switch {
		case done:
			return res, true, err
		case st != nil:
			return Result{}, false, nil
		}
	}
	if e.Admit != nil {
		release, err := e.Admit(ctx)
		if err != nil {
			return Result{}, true, err // nothing recorded: as if never tried
		}
		defer releaseOf(release)()
	}
	q := queriesOf(a.Fence)
	var r row

	// An operator's cancel stops the task before a call goes out; once it
	// is out, the call finishes and its outcome is recorded
	// (agentledger.EffectContext): cut off, it would leave no record.
	if err := agentledger.CancelRequested(ctx); err != nil {
		return Result{}, true, err
	}
	ctx = agentledger.EffectContext(ctx)
	out, perr := e.Perform(ctx, call)
	state, msg := StateCompleted, ""
	if perr != nil {
		var perm *agentledger.PermanentError
		var refused *NotPerformedError
		if !errors.As(perr, &perm) || errors.As(perr, &refused) {
			return out, true, perr // transient or refused: nothing recorded, performed again next time
		}
		state, msg = StateFailed, agentledger.SafeText(perr.Error())
	}
	body, err := encodeResult(out)
	if err != nil {
		return Result{}, true, err
	}
	// A keyed effect's record need not be durable before Do returns: lost
	// in a server crash, the call is sent again under its key; it is
	// written with the records of the attempts performing at the same
	// time (batch.go). A pure effect's must be durable: performed again it
	// may answer otherwise, and what the task did next was built from this
	// answer.
	if e.Class == Keyed {
		ans := l.recorderFor(a.Fence).record(ctx, keyedRecord{tenant: a.Tenant, operation: e.Operation, key: call.Key,
			hash: hash, class: string(e.Class), taskID: a.TaskID, generation: a.Generation, step: e.StepPath,
			token: a.token(), state: string(state), result: body, externalRef: agentledger.SafeText(out.ExternalRef),
			err: msg, fenceID: a.fenceID()})
		switch {
		case ans.err != nil:
			err = ans.err
		case ans.landed:
			r.result, r.externalRef = ans.result, ans.externalRef
		default:
			err = pgx.ErrNoRows
		}
	} else {
		err = again(ctx, func() error {
			return l.db.QueryRow(ctx, q.insertOutcome, a.Tenant, e.Operation, call.Key, hash, string(e.Class), a.TaskID,
				a.Generation, e.StepPath, a.token(), string(state), body, agentledger.SafeText(out.ExternalRef), msg,
				a.fenceID()).Scan(&r.result, &r.externalRef)
		})
	}
	if err == nil {
		r.state, r.err = state, msg
		res, err := outcome(r, call.Key)
		return res, true, err
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return Result{}, true, fmt.Errorf("ledger: recording effect %s: %w", short(call.Key), err)
	}
	// The lease was lost, or another performance landed first.
	var current bool
	err = l.db.QueryRow(ctx, q.landed, append(pk, a.token(), a.fenceID())...).Scan(&r.state, &r.hash, &r.result, &r.externalRef, &r.err, &current)
	switch {
	case err != nil && !errors.Is(err, pgx.ErrNoRows):
		return Result{}, true, fmt.Errorf("ledger: recording effect %s: %w", short(call.Key), err)
	case err == nil && current && (r.state == StateCompleted || r.state == StateFailed):
		if !bytes.Equal(r.hash, hash) {
			return Result{}, true, fmt.Errorf("effect %s at %s: %w", short(call.Key), e.StepPath, agentledger.ErrKeyReuse)
		}
		res, err := outcome(r, call.Key)
		return res, true, err
	case err == nil && current:
		return Result{}, true, fmt.Errorf("ledger: effect %s was reserved meanwhile; retry", short(call.Key))
	}
	return Result{}, true, agentledger.Errorf(agentledger.CodeLeaseLost, "ledger: effect %s was performed but the lease was lost before it was recorded; "+
		"the next attempt performs it again with the same key", short(call.Key))
}

// unlooked reports whether the call under key may go out without the
// fenced look-up: the attempt running ctx is, by its worker's own clock,
// still within its lease (agentledger.LeaseDeadline), and has not sent
// the key already. Without a deadline (a caller that is no worker) it
// may not.
func unlooked(ctx context.Context, key string) bool {
	d := agentledger.LeaseDeadlineOf(ctx)
	return d != nil && d.Holds() && d.Unlooked(key)
}

// lookup reads the effect's row, fenced on the lease: done when the lease
// is lost, the look-up failed or the row is finished (its outcome served);
// otherwise st is the row's state, nil when there is no row.
func (l *Ledger) lookup(ctx context.Context, pk []any, a Attempt, call Call, e Effect, hash []byte) (res Result, st *State, done bool, err error) {
	var fenced bool
	var r row
	err = l.db.QueryRow(ctx, queriesOf(a.Fence).lookup, append(pk, a.fenceID(), a.token())...).
		Scan(&fenced, &st, &r.hash, &r.result, &r.externalRef, &r.err)
	switch {
	case err != nil:
		return Result{}, nil, true, fmt.Errorf("ledger: looking up effect %s: %w", short(call.Key), err)
	case !fenced:
		return Result{}, nil, true, agentledger.Errorf(agentledger.CodeLeaseLost, "task %d: its lease (token %d) was lost: another worker holds it, or it expired", a.TaskID, a.token())
	case st != nil && (*st == StateCompleted || *st == StateFailed):
		r.state = *st
		res, err := served(r, hash, call, e)
		return res, st, true, err
	}
	return Result{}, st, false, nil
}

// served returns a finished row's stored outcome: the result, or the stored
// failure again. A different request hash is ErrKeyReuse.
func served(r row, hash []byte, call Call, e Effect) (Result, error) {
	if !bytes.Equal(r.hash, hash) {
		return Result{}, fmt.Errorf("effect %s at %s: %w", short(call.Key), e.StepPath, agentledger.ErrKeyReuse)
	}
	res, err := outcome(r, call.Key)
	res.Replayed = true
	return res, err
}

// outcome returns a finished row's stored outcome: the result, or the
// stored failure again as a permanent *FailedError.
func outcome(r row, key string) (Result, error) {
	res, err := stored(r)
	if err != nil {
		return Result{}, err
	}
	if r.state == StateFailed {
		return res, agentledger.Permanent(&FailedError{Key: key, Message: r.err, Result: res})
	}
	return res, nil
}

// perform runs a reserved effect outside any transaction and records its
// outcome (a reconcilable one is looked up first).
func (l *Ledger) perform(ctx context.Context, pk []any, a Attempt, call Call, e Effect, reconcile bool) (Result, error) {
	// As in doUnreserved: no call after an operator's cancel, and the one
	// in flight when it comes is finished and recorded.
	if err := agentledger.CancelRequested(ctx); err != nil {
		l.release(ctx, pk, a) // a fresh reservation: nothing was sent
		return Result{}, err
	}
	ctx = agentledger.EffectContext(ctx)
	if reconcile {
		found, ok, err := e.Reconcile(ctx, call)
		if err != nil {
			return Result{}, fmt.Errorf("reconciling effect %s: %w", short(call.Key), err)
		}
		if ok {
			return l.recordAs(ctx, queriesOf(a.Fence).recordFound, pk, a, StateCompleted, found, "")
		}
	}
	out, perr := e.Perform(ctx, call)
	if perr == nil {
		return l.record(ctx, pk, a, StateCompleted, out, "")
	}
	var (
		perm    *agentledger.PermanentError
		refused *NotPerformedError
		later   *agentledger.RetryAfterError
	)
	switch {
	case errors.As(perr, &refused), e.Class == Unsafe && errors.As(perr, &later):
		// Nothing was performed (refused, or the downstream said to
		// come back later): a fresh reservation goes, so the effect is
		// as if never tried.
		l.release(ctx, pk, a)
		return out, perr
	case errors.As(perr, &perm):
		return l.record(ctx, pk, a, StateFailed, out, perr.Error())
	case e.Class == Unsafe:
		// The call may have taken effect: never perform it blindly.
		// The effect is unknown now, and its task waits for an operator.
		msg := agentledger.SafeText(fmt.Sprintf("the call's outcome is unknown (%v)", perr))
		if _, err := l.db.Exec(ctx, unknownOwnedSQL, append(pk, msg, a.token())...); err != nil {
			return out, fmt.Errorf("ledger: marking effect %s unknown: %w", short(call.Key), err)
		}
		return out, fmt.Errorf("effect %s at %s: %v: %w", short(call.Key), e.StepPath, perr, ErrNeedsAttention)
	}
	return out, perr // transient: the reservation stays ours, pending
}

// release deletes a fresh reservation of the attempt whose effect was not
// performed. A reservation taken over from an earlier attempt stays: that
// attempt's outcome is still unknown.
func (l *Ledger) release(ctx context.Context, pk []any, a Attempt) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_, _ = l.db.Exec(rctx, releaseSQL, append(pk, a.token())...) // if it fails, the row stays pending: unknown, not lost
}

// performLocal runs a local effect in the reservation transaction and
// records it there: both commit, or neither.
func (l *Ledger) performLocal(ctx context.Context, tx pgx.Tx, call Call, e Effect, pk []any) (Result, error) {
	res, err := e.PerformLocal(ctx, call, tx)
	if err != nil {
		return Result{}, err // rolls the reservation back with the effect
	}
	body, err := encodeResult(res)
	if err != nil {
		return Result{}, err
	}
	var r row
	a := call.Attempt
	err = tx.QueryRow(ctx, queriesOf(a.Fence).record, append(pk, string(StateCompleted), body, res.ExternalRef, "", a.token(), a.fenceID())...).
		Scan(&r.result, &r.externalRef)
	if errors.Is(err, pgx.ErrNoRows) {
		return Result{}, agentledger.Errorf(agentledger.CodeLeaseLost, "ledger: recording local effect %s: the lease was lost first", short(call.Key))
	}
	if err != nil {
		return Result{}, err
	}
	return stored(r)
}

// record stores an outcome, fenced on the reservation and the lease, and
// returns the outcome that stands: (result, nil) when completed, (result,
// permanent *FailedError) when failed. When the fence refuses, an outcome
// recorded meanwhile by a concurrent call of the same attempt stands (the
// first result that lands); otherwise the lease was lost.
func (l *Ledger) record(ctx context.Context, pk []any, a Attempt, st State, res Result, msg string) (Result, error) {
	return l.recordAs(ctx, queriesOf(a.Fence).record, pk, a, st, res, msg)
}

// recordAs is record through statement query (record or recordFound).
func (l *Ledger) recordAs(ctx context.Context, query string, pk []any, a Attempt, st State, res Result, msg string) (Result, error) {
	body, err := encodeResult(res)
	if err != nil {
		return Result{}, err
	}
	key := short(pk[2].(string))
	var r row
	msg = agentledger.SafeText(msg)
	q := queriesOf(a.Fence)
	err = again(ctx, func() error {
		return l.db.QueryRow(ctx, query, append(pk, string(st), body, agentledger.SafeText(res.ExternalRef), msg, a.token(), a.fenceID())...).
			Scan(&r.result, &r.externalRef)
	})
	switch {
	case err == nil:
		r.state, r.err = st, msg
		return outcome(r, pk[2].(string))
	case !errors.Is(err, pgx.ErrNoRows):
		return Result{}, fmt.Errorf("ledger: recording effect %s: %w", key, err)
	}
	var current bool
	err = l.db.QueryRow(ctx, q.landed, append(pk, a.token(), a.fenceID())...).Scan(&r.state, &r.hash, &r.result, &r.externalRef, &r.err, &current)
	if err == nil && current && (r.state == StateCompleted || r.state == StateFailed) {
		return outcome(r, pk[2].(string))
	}
	return Result{}, agentledger.Errorf(agentledger.CodeLeaseLost, "ledger: effect %s was performed but the lease was lost before it was recorded; "+
		"the next attempt recovers it by its class", key)
}

// encodeResult is the stored form: {"status":…, "body":…} without the
// external reference, which has its own column.
func encodeResult(r Result) ([]byte, error) {
	if r.Body != nil && !json.Valid(r.Body) {
		return nil, agentledger.Invalid("result", "body is not valid JSON")
	}
	return json.Marshal(struct {
		Status int             `json:"status,omitempty"`
		Body   json.RawMessage `json:"body,omitempty"`
	}{r.Status, agentledger.SafeJSON(r.Body)})
}

func stored(r row) (Result, error) {
	var res Result
	if len(r.result) > 0 {
		if err := json.Unmarshal(r.result, &res); err != nil {
			return Result{}, fmt.Errorf("ledger: stored result: %w", err)
		}
	}
	res.ExternalRef = r.externalRef
	return res, nil
}

// Entry is one effect of a task's journal.
type Entry struct {
	Tenant      string
	Operation   string
	Key         string
	Class       Class
	State       State
	StepPath    string
	OwnerToken  int64
	Performed   int32
	Result      Result
	Error       string
	Note        string
	CreatedAt   time.Time
	UpdatedAt   time.Time
	CompletedAt *time.Time
	// Compensate is the call that undoes the effect, if it declared one.
	Compensate json.RawMessage
	// RetryAllowed is an operator's resolution of an unknown effect: it
	// was not performed, and may be performed once more.
	RetryAllowed bool
}

// Journal returns the effects of a task generation in the order they were
// intended.
func (l *Ledger) Journal(ctx context.Context, taskID int64, generation int32) ([]Entry, error) {
	return l.entries(ctx, journalSQL, taskID, generation)
}

// LastCompleted returns the newest completed effect of operation op that a
// task generation intended at step path step or under it ("notify/ops"
// matches "notify/ops/17" too). A notification dispatcher finds there the
// message it posted for a rule, to update it in place.
func (l *Ledger) LastCompleted(ctx context.Context, taskID int64, generation int32, op, step string) (Entry, bool, error) {
	es, err := l.entries(ctx, lastCompletedSQL, taskID, generation, op, step)
	if err != nil || len(es) == 0 {
		return Entry{}, false, err
	}
	return es[0], true, nil
}

// Abandoned marks unknown the pending effect e of task taskID, left by an
// attempt that no longer holds the task: it may or may not have happened,
// and an operator resolves it (Resolve). Called by the task's current
// attempt, which no earlier one can outlive (their writes are fenced).
func (l *Ledger) Abandoned(ctx context.Context, taskID int64, e Entry, why string) error {
	_, err := l.db.Exec(ctx, abandonedSQL, e.Tenant, e.Operation, e.Key, taskID, agentledger.SafeText(why))
	if err != nil {
		return fmt.Errorf("ledger: marking effect %s unknown: %w", short(e.Key), err)
	}
	return nil
}

// UnbuiltPrefix begins the operation of an effect recorded by Unbuilt:
// "unbuilt:http_request".
const UnbuiltPrefix = "unbuilt:"

// UnbuiltOutcome is what Unbuilt did.
type UnbuiltOutcome int

const (
	// UnbuiltRecorded: the step's record says the effect could not be sent.
	UnbuiltRecorded UnbuiltOutcome = iota
	// UnbuiltBuilt: nothing recorded, a built call of the step has a row.
	UnbuiltBuilt
	// UnbuiltResolved: nothing recorded, an operator resolved the step's
	// record as done since the caller read the journal.
	UnbuiltResolved
	// UnbuiltStale: nothing recorded, the attempt's lease is gone.
	UnbuiltStale
)

// Unbuilt records as failed the effect of a at stepPath that could not
// be built or was refused before it was sent: a compensation whose
// arguments do not render from the result of the effect it undoes, or
// whose tool the tenant's grant no longer allows. The journal then shows
// it failed, with why, and an operator settles it: Resolve as done (it
// was undone by hand), or a replay once the cause is fixed. Its operation
// is UnbuiltPrefix and the one it would have been known by (a
// compensation's tool), so it never shares a key with a call that was
// built; its class pure: it changed nothing. A step holds an unbuilt row
// or built ones, never both: nothing is recorded where a built call of
// the step has a row (it says what may have happened), and ClearUnbuilt
// drops the unbuilt row when the call is built. A record an operator
// resolved as done stands. Fenced on a's lease: a stale attempt records
// nothing.
func (l *Ledger) Unbuilt(ctx context.Context, a Attempt, stepPath, operation, why string) (UnbuiltOutcome, error) {
	operation = UnbuiltPrefix + operation
	key := EffectKey(a.Tenant, a.TaskID, a.Generation, stepPath, operation)
	var fenced, built, recorded bool
	err := l.db.QueryRow(ctx, queriesOf(a.Fence).unbuilt, a.Tenant, operation, key, string(Pure), a.TaskID, a.Generation,
		stepPath, a.token(), a.fenceID(), agentledger.SafeText(why)).Scan(&fenced, &built, &recorded)
	switch {
	case err != nil:
		return 0, fmt.Errorf("ledger: recording the unbuilt effect at %s: %w", stepPath, err)
	case !fenced:
		return UnbuiltStale, nil
	case recorded:
		return UnbuiltRecorded, nil
	case built:
		return UnbuiltBuilt, nil
	}
	return UnbuiltResolved, nil
}

// ClearUnbuilt drops the unbuilt record of stepPath (Unbuilt): attempt
// a has built its call, which the ledger records under its own
// operation. cleared is false when there was none to drop: an operator
// resolved it as done meanwhile (the call must not be sent: a new look at
// the journal serves the step), or a's lease is gone. Fenced on a's
// lease.
func (l *Ledger) ClearUnbuilt(ctx context.Context, a Attempt, stepPath string) (cleared bool, err error) {
	tag, err := l.db.Exec(ctx, queriesOf(a.Fence).clearUnbuilt, a.Tenant, a.TaskID, a.Generation, stepPath, a.token(), a.fenceID())
	if err != nil {
		return false, fmt.Errorf("ledger: clearing the unbuilt effect at %s: %w", stepPath, err)
	}
	return tag.RowsAffected() > 0, nil
}

// Unbuilt reports whether e was recorded by Ledger.Unbuilt.
func (e Entry) Unbuilt() bool { return strings.HasPrefix(e.Operation, UnbuiltPrefix) }

func (l *Ledger) entries(ctx context.Context, sql string, args ...any) ([]Entry, error) {
	rows, err := l.db.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	defer rows.Close()
	var out []Entry
	for rows.Next() {
		var e Entry
		if err := scanEntry(rows, &e); err != nil {
			return nil, fmt.Errorf("journal: %w", err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// scanEntry scans entryColumns, then extra, and decodes the stored result.
func scanEntry(row pgx.Row, e *Entry, extra ...any) error {
	var result []byte
	dest := append([]any{&e.Tenant, &e.Operation, &e.Key, &e.Class, &e.State, &e.StepPath, &e.OwnerToken,
		&e.Performed, &result, &e.Result.ExternalRef, &e.Error, &e.Note, &e.CreatedAt, &e.UpdatedAt,
		&e.CompletedAt, &e.RetryAllowed, &e.Compensate}, extra...)
	if err := row.Scan(dest...); err != nil {
		return err
	}
	if len(result) > 0 {
		ref := e.Result.ExternalRef
		if err := json.Unmarshal(result, &e.Result); err != nil {
			return err
		}
		e.Result.ExternalRef = ref
	}
	return nil
}
