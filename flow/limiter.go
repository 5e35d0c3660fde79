package flow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentledger/agentledger"
)

// CacheFor is how long a Limiter keeps the limits it read: a limit set or
// removed holds in every daemon within this time.
const CacheFor = 5 * time.Second

// errorLogEvery is how often a Limiter logs a failing target's error.
const errorLogEvery = time.Minute

// Limiter books calls on targets against the fleet-wide limits. It is safe
// for concurrent use; one per daemon is enough.
type Limiter struct {
	db  DB
	log *slog.Logger

	limits *readCache[Limit] // by target

	// slotLease is how long a concurrency slot is leased between renewals
	// (SlotLease; shorter in tests).
	slotLease time.Duration

	mu     sync.Mutex // guards logged and the batches
	logged map[string]time.Time

	breakers breakerCache // of the breakers that are not closed

	// batches are the calls booked ahead on high-rate targets (batch.go),
	// by target; gen counts Changed, so that a booking that was in flight
	// during a change is not kept.
	batches map[string]*batchState
	gen     uint64

	// booked, when set (by tests), is told when each call went through,
	// on the database's clock (for a call of a batch: estimated from its
	// booking's); bookings is told of each statement that answered.
	booked   func(target string, at time.Time)
	bookings func(target string, n int, allowed bool)
}

// NewLimiter returns a limiter over the limits and state in db, logging to
// log (nil: slog.Default()).
func NewLimiter(db DB, log *slog.Logger) *Limiter {
	if log == nil {
		log = slog.Default()
	}
	return &Limiter{db: db, log: log, logged: map[string]time.Time{}, slotLease: SlotLease,
		limits: newReadCache[Limit](), breakers: breakerCache{open: newReadCache[*breakerView]()}}
}

// Take books one call on target if its limit (its own, else its kind's
// default) allows it now, and returns 0; otherwise it books nothing and
// returns how long until it would be allowed. A target without a limit
// is allowed at once. A database error is returned (and logged once a
// minute per target): the caller must wait and try again, not call.
func (l *Limiter) Take(ctx context.Context, target string) (wait time.Duration, err error) {
	t, kind, err := ParseTarget(target)
	if err != nil {
		return 0, err
	}
	if t == KindDefault(kind) {
		return 0, agentledger.Invalid("target", "%q is a kind's default, not a target a call reaches", target)
	}
	wait, err = l.take(ctx, t, kind)
	if err != nil && ctx.Err() == nil {
		l.logError(t, err)
	}
	return wait, err
}

func (l *Limiter) take(ctx context.Context, target, kind string) (time.Duration, error) {
	lim, ok, err := l.limitOf(ctx, target, kind)
	if err != nil || !ok || lim.Rate.IsZero() {
		return 0, err
	}
	if batchCap(lim) >= 2 {
		return l.takeBatched(ctx, target, lim)
	}
	b, err := l.book(ctx, target, lim, 1)
	switch {
	case err != nil:
		return 0, err
	case b.allowed:
		l.tell(target, b.at)
		return 0, nil
	}
	return b.wait, nil
}

// booking is takeSQL's answer.
type booking struct {
	allowed bool
	// start is the theoretical arrival time of the first call booked, at
	// when the statement let it through (no later than start), both on
	// the database's clock; local is when the answer arrived, on ours.
	start, at, local time.Time
	// wait, when refused, is how long until a booking would pass.
	wait time.Duration
}

// book books n calls on target under lim in one statement (takeSQL): all
// of them or none.
func (l *Limiter) book(ctx context.Context, target string, lim Limit, n int) (booking, error) {
	e := lim.Rate.Emission()
	var b booking
	var waitMicros int64
	err := l.db.QueryRow(ctx, takeSQL, target, int64(n)*e.Microseconds(), lim.tolerance().Microseconds()).
		Scan(&b.allowed, &b.start, &b.at, &waitMicros)
	b.local = time.Now()
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		// Refused by a row this statement's snapshot cannot see yet: a
		// concurrent first booking. Try again one emission later.
		b.wait = e
		return b, nil
	case err != nil:
		return b, fmt.Errorf("flow limit of %s: %w", target, err)
	}
	if l.bookings != nil {
		l.bookings(target, n, b.allowed)
	}
	// The wait is read from this statement's snapshot, which may be older
	// than the booking that refused us: never report less than a
	// millisecond, so that a caller does not spin.
	if !b.allowed {
		b.wait = max(time.Duration(waitMicros)*time.Microsecond, time.Millisecond)
	}
	return b, nil
}

// tell tells the test hook that a call on target went through at at.
func (l *Limiter) tell(target string, at time.Time) {
	if l.booked != nil {
		l.booked(target, at)
	}
}

// Wait takes one call on target, waiting as long as its limit says. While
// the database fails it waits a second and tries again: a target whose
// limit cannot be checked does not run. It returns ctx's error, or at once
// the error of a target that is not valid.
func (l *Limiter) Wait(ctx context.Context, target string) error {
	for {
		wait, err := l.Take(ctx, target)
		if err != nil {
			var ie *agentledger.InvalidError
			if errors.As(err, &ie) {
				return err
			}
			wait = time.Second
		}
		if wait == 0 {
			return nil
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-timer.C:
		}
	}
}

// Changed drops the cached limits and the calls booked ahead: the next
// Take reads the limits again.
func (l *Limiter) Changed() {
	l.limits.drop()
	l.breakers.open.drop()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.batches = nil
	l.gen++
}

// limitOf returns the limit in force for target: its own, else its kind's
// default.
func (l *Limiter) limitOf(ctx context.Context, target, kind string) (Limit, bool, error) {
	limits, err := l.current(ctx)
	if err != nil {
		return Limit{}, false, err
	}
	if lim, ok := limits[target]; ok {
		return lim, true, nil
	}
	lim, ok := limits[KindDefault(kind)]
	return lim, ok, nil
}

// current returns the limits (see readCache: read again when older than
// CacheFor).
func (l *Limiter) current(ctx context.Context) (map[string]Limit, error) {
	return l.limits.get(ctx, func(ctx context.Context) (map[string]Limit, error) {
		ls, err := NewStore(l.db).List(ctx)
		if err != nil {
			return nil, err
		}
		m := make(map[string]Limit, len(ls))
		for _, lim := range ls {
			m[lim.Target] = lim
		}
		return m, nil
	})
}

// logError logs err for target unless it was logged within errorLogEvery.
func (l *Limiter) logError(target string, err error) {
	l.mu.Lock()
	last, seen := l.logged[target]
	now := time.Now()
	quiet := seen && now.Sub(last) < errorLogEvery
	if !quiet {
		l.logged[target] = now
	}
	l.mu.Unlock()
	if !quiet {
		l.log.Error("flow limit unavailable: calls to this target wait until it can be checked", "target", target, "err", err)
	}
}

// takeSQL books calls on $1 under GCRA with tolerance $3 (microseconds):
// the theoretical arrival time moves by $2 microseconds, one emission per
// call booked (a batch books several, batch.go). It runs on the database's
// clock, under the state row's lock (the conflict arm of the insert locks
// it and sees its latest version). A first booking is always allowed (the
// burst is at least 1). An allowed booking returns the first call's
// theoretical arrival time and when it let that call through; when refused
// nothing is written and the second arm returns how long until a booking
// would pass.
//
// A booking commits asynchronously (synchronous_commit off for its own
// transaction only): the state row's lock is held until commit, so a
// booking that waited for its WAL flush would hold every other daemon's
// booking of the target behind a disk flush (708 effects/s against 1,213
// in one agentbench run). A crash of PostgreSQL may lose the bookings of
// its last few hundred milliseconds, letting that many calls through again
// once: a burst over the limit, never a lost call.
const takeSQL = `/* flow.take */
WITH async AS (SELECT set_config('synchronous_commit', 'off', true)),
took AS (
	INSERT INTO flow_state AS s (target, tat) VALUES ($1, clock_timestamp() + $2::bigint * interval '1 microsecond')
	ON CONFLICT (target) DO UPDATE SET tat = greatest(s.tat, clock_timestamp()) + $2::bigint * interval '1 microsecond'
	WHERE greatest(s.tat, clock_timestamp()) - $3::bigint * interval '1 microsecond' <= clock_timestamp()
	RETURNING s.tat - $2::bigint * interval '1 microsecond' AS start)
SELECT true, start, least(start, clock_timestamp()), 0::bigint FROM took, async
UNION ALL
SELECT false, s.tat, s.tat,
	ceil(extract(epoch FROM s.tat - $3::bigint * interval '1 microsecond' - clock_timestamp()) * 1000000)::bigint
FROM flow_state s WHERE s.target = $1 AND NOT EXISTS (SELECT FROM took)`
