package flow

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// SlotGrace is how long a concurrency slot outlives the longest its call
// may take: a daemon that dies holding it gives it back after that.
const SlotGrace = 10 * time.Second

// acquire takes a free concurrency slot of target, one of 1..limit, leased
// to a new random holder for lease; ok is false when all are taken. The
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

const slotRowsSQL = `/* flow.slot_rows */ SELECT count(*) FROM flow_slots WHERE target = $1`

const makeSlotsSQL = `/* flow.make_slots */
INSERT INTO flow_slots (target, n) SELECT $1, generate_series(1, $2::int) ON CONFLICT DO NOTHING`

const releaseSlotSQL = `/* flow.release_slot */
WITH async AS (SELECT set_config('synchronous_commit', 'off', true))
UPDATE flow_slots SET holder = NULL, expires_at = NULL FROM async
WHERE target = $1 AND n = $2 AND holder = $3`
