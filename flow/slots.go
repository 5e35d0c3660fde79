package flow

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// SlotLease is how long a concurrency slot is leased at a time. The
// daemon whose call holds it renews the lease every SlotLease/3 while the
// call runs (keepSlot), so a slot is held exactly as long as its call
// however long that takes, and a daemon that dies holding slots gives
// them back within SlotLease — not after the call's timeout.
const SlotLease = 6 * time.Second

// SlotGrace is how long a half-open breaker's probe outlives the longest
// its call may take: a daemon that dies probing lets another probe after
// that.
const SlotGrace = 10 * time.Second

// acquire takes a free concurrency slot of target, one of 1..limit, leased
// to a new random holder for lease (renewed by keepSlot); ok is false when all are taken. The
// slot rows are made the first time (or when the cap grows).
func (l *Limiter) acquire(ctx context.Context, target string, limit int, lease time.Duration) (n int, holder string, ok bool, err error) {
	holder = newHolder()
	for made := false; ; made = true {
		err = l.db.QueryRow(ctx, acquireSlotSQL, target, limit, holder, lease.Microseconds()).Scan(&n)
		switch {
		case err == nil:
			return n, holder, true, nil
		case !errors.Is(err, pgx.ErrNoRows):
			return 0, "", false, fmt.Errorf("flow slots of %s: %w", target, err)
		case made:
			return 0, "", false, nil
		}
		var rows int
		if err := l.db.QueryRow(ctx, slotRowsSQL, target).Scan(&rows); err != nil {
			return 0, "", false, fmt.Errorf("flow slots of %s: %w", target, err)
		}
		if rows >= limit {
			return 0, "", false, nil
		}
		if _, err := l.db.Exec(ctx, makeSlotsSQL, target, limit); err != nil {
			return 0, "", false, fmt.Errorf("flow slots of %s: %w", target, err)
		}
	}
}

// release gives slot n of target back, if holder still holds it.
func (l *Limiter) release(ctx context.Context, target string, n int, holder string) error {
	if _, err := l.db.Exec(ctx, releaseSlotSQL, target, n, holder); err != nil {
		return fmt.Errorf("flow slots of %s: %w", target, err)
	}
	return nil
}

// keepSlot renews the lease of slot n of target, held by holder, every
// lease/3 until the returned function is called (once the call ended, before
// the release). A renewal that fails is logged and tried again at the next
// tick; a slot whose lease ran out meanwhile was free for others, as a
// dead daemon's is, and once another call took it the renewals stop.
func (l *Limiter) keepSlot(target string, n int, holder string, lease time.Duration) (stop func()) {
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		tick := time.NewTicker(lease / 3)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), lease/3)
			tag, err := l.db.Exec(ctx, renewSlotSQL, target, n, holder, lease.Microseconds())
			cancel()
			switch {
			case err != nil:
				l.logError(target, fmt.Errorf("flow slots of %s: renew: %w", target, err))
			case tag.RowsAffected() == 0:
				return // its lease ran out and another call took it: nothing to keep
			}
		}
	}()
	// Waiting for the goroutine keeps a renewal from landing after the
	// release and holding a free slot for another lease.
	return sync.OnceFunc(func() { close(done); <-ended })
}

func newHolder() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// acquireSlotSQL takes the lowest free slot 1..$2 of $1: free when no one
// holds it or its lease ended. FOR UPDATE SKIP LOCKED makes concurrent
// acquirers (any daemon) take different rows, and the row lock re-checks
// the condition on the latest version, so a slot is never held twice.
// Commits asynchronously, as a booking does (see takeSQL): a crash of
// PostgreSQL may lose the last acquisitions, letting as many extra calls
// through once.
const acquireSlotSQL = `/* flow.acquire_slot */
WITH async AS (SELECT set_config('synchronous_commit', 'off', true)),
free AS (
	SELECT target, n FROM flow_slots
	WHERE target = $1 AND n <= $2 AND (holder IS NULL OR expires_at <= clock_timestamp())
	ORDER BY n LIMIT 1 FOR UPDATE SKIP LOCKED)
UPDATE flow_slots s SET holder = $3, expires_at = clock_timestamp() + $4::bigint * interval '1 microsecond'
FROM free, async WHERE (s.target, s.n) = (free.target, free.n)
RETURNING s.n`

// renewSlotSQL extends the lease of slot $2 of $1 while $3 holds it. Like
// an acquisition it commits asynchronously: a renewal lost to a crash of
// PostgreSQL only shortens the lease.
const renewSlotSQL = `/* flow.renew_slot */
WITH async AS (SELECT set_config('synchronous_commit', 'off', true))
UPDATE flow_slots SET expires_at = clock_timestamp() + $4::bigint * interval '1 microsecond' FROM async
WHERE target = $1 AND n = $2 AND holder = $3`

const slotRowsSQL = `/* flow.slot_rows */ SELECT count(*) FROM flow_slots WHERE target = $1`

const makeSlotsSQL = `/* flow.make_slots */
INSERT INTO flow_slots (target, n) SELECT $1, generate_series(1, $2::int) ON CONFLICT DO NOTHING`

const releaseSlotSQL = `/* flow.release_slot */
WITH async AS (SELECT set_config('synchronous_commit', 'off', true))
UPDATE flow_slots SET holder = NULL, expires_at = NULL FROM async
WHERE target = $1 AND n = $2 AND holder = $3`
