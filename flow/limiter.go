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

	load   sync.Mutex // one reload of the limits at a time
	mu     sync.Mutex
	limits map[string]Limit // by target; nil until read
	read   time.Time        // when limits were read
	logged map[string]time.Time

	breakers breakerCache // of the breakers that are not closed

	// booked, when set (by tests), is told when each booking let its call
	// through, on the database's clock.
	booked func(target string, at time.Time)
}

// NewLimiter returns a limiter over the limits and state in db, logging to
// log (nil: slog.Default()).
func NewLimiter(db DB, log *slog.Logger) *Limiter {
	if log == nil {
		log = slog.Default()
	}
	return &Limiter{db: db, log: log, logged: map[string]time.Time{}}
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
	e := lim.Rate.Emission()
	var allowed bool
	var at time.Time
	var waitMicros int64
	err = l.db.QueryRow(ctx, takeSQL, target, e.Microseconds(), lim.tolerance().Microseconds()).
		Scan(&allowed, &at, &waitMicros)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		// Refused by a row this statement's snapshot cannot see yet: a
		// concurrent first booking. Try again one emission later.
		return e, nil
	case err != nil:
		return 0, fmt.Errorf("flow limit of %s: %w", target, err)
	case allowed:
		if l.booked != nil {
			l.booked(target, at)
		}
		return 0, nil
	}
	// The wait is read from this statement's snapshot, which may be older
	// than the booking that refused us: never report less than a
	// millisecond, so that a caller does not spin.
	return max(time.Duration(waitMicros)*time.Microsecond, time.Millisecond), nil
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

// Changed drops the cached limits: the next Take reads them again.
func (l *Limiter) Changed() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.limits = nil
	l.dropBreakers()
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

// current returns the limits, read again when older than CacheFor.
func (l *Limiter) current(ctx context.Context) (map[string]Limit, error) {
	if m := l.cached(); m != nil {
		return m, nil
	}
	l.load.Lock()
	defer l.load.Unlock()
	if m := l.cached(); m != nil { // read by another caller meanwhile
		return m, nil
	}
	ls, err := NewStore(l.db).List(ctx)
	if err != nil {
		return nil, err
	}
	m := make(map[string]Limit, len(ls))
	for _, lim := range ls {
		m[lim.Target] = lim
	}
	l.mu.Lock()
	l.limits, l.read = m, time.Now()
	l.mu.Unlock()
	return m, nil
}

func (l *Limiter) cached() map[string]Limit {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.limits != nil && time.Since(l.read) < CacheFor {
		return l.limits
	}
	return nil
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

// takeSQL books one call on $1 under GCRA with emission $2 and tolerance
// $3 (microseconds), on the database's clock, under the state row's lock
// (the conflict arm of the insert locks it and sees its latest version).
// A first booking is always allowed (the burst is at least 1). When the
// call is refused nothing is written and the second arm returns how long
// until it would pass.
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
	RETURNING least(s.tat - $2::bigint * interval '1 microsecond', clock_timestamp()) AS at)
SELECT true, at, 0::bigint FROM took, async
UNION ALL
SELECT false, s.tat,
	ceil(extract(epoch FROM s.tat - $3::bigint * interval '1 microsecond' - clock_timestamp()) * 1000000)::bigint
FROM flow_state s WHERE s.target = $1 AND NOT EXISTS (SELECT FROM took)`
