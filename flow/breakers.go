package flow

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentledger/agentledger"
)

// MaxManualOpen bounds how long an operator opens a breaker for with a
// duration (without one it stays open until closed).
const MaxManualOpen = 7 * 24 * time.Hour

// Breakers returns the stored breakers by target, with the database's
// clock when read.
func (s *Store) Breakers(ctx context.Context) ([]BreakerState, time.Time, error) {
	rows, err := s.db.Query(ctx, `/* flow.breakers */ SELECT `+breakerColumns+`, clock_timestamp() FROM flow_breakers ORDER BY target`)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("listing the circuit breakers: %w", err)
	}
	var now time.Time
	bs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (BreakerState, error) {
		var b BreakerState
		return b, row.Scan(append(b.dests(), &now)...)
	})
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("listing the circuit breakers: %w", err)
	}
	return bs, now, nil
}

// OpenBreaker opens target's breaker by hand, for every daemon: for d when
// d > 0 (then one call probes it, as after a cool-down), else until
// CloseBreaker. Any target may be opened, with a breaker configured or
// not.
func (s *Store) OpenBreaker(ctx context.Context, target string, d time.Duration) (BreakerState, error) {
	t, kind, err := ParseTarget(target)
	if err != nil {
		return BreakerState{}, err
	}
	switch {
	case t == KindDefault(kind):
		return BreakerState{}, agentledger.Invalid("target", "%q is a kind's default: open the breaker of one target", target)
	case kind == KindSlackChannel || kind == KindSlackWorkspace:
		return BreakerState{}, agentledger.Invalid("target", "Slack targets have no breaker: the notification outbox retries with backoff")
	case d < 0 || d > MaxManualOpen:
		return BreakerState{}, agentledger.Invalid("for", "%s must be 0 (until closed) to %s", d, MaxManualOpen)
	}
	var b BreakerState
	err = s.db.QueryRow(ctx, openBreakerSQL, t, d.Milliseconds()).Scan(append(b.dests(), new(time.Time))...)
	if err != nil {
		return BreakerState{}, fmt.Errorf("circuit breaker of %s: %w", t, err)
	}
	return b, nil
}

// CloseBreaker closes target's breaker by hand, for every daemon, and
// forgets its failures. It returns the breaker as it was; a target whose
// breaker never counted a failure is an error matching
// agentledger.ErrNotFound.
func (s *Store) CloseBreaker(ctx context.Context, target string) (was BreakerState, err error) {
	t, _, err := ParseTarget(target)
	if err != nil {
		return BreakerState{}, err
	}
	err = s.db.QueryRow(ctx, closeBreakerSQL, t).Scan(append(was.dests(), new(time.Time))...)
	if errors.Is(err, pgx.ErrNoRows) {
		return BreakerState{}, fmt.Errorf("no circuit breaker of %s has counted a failure: %w", t, agentledger.ErrNotFound)
	}
	if err != nil {
		return BreakerState{}, fmt.Errorf("circuit breaker of %s: %w", t, err)
	}
	return was, nil
}

var openBreakerSQL = `/* flow.open_breaker */
WITH b AS (
	INSERT INTO flow_breakers AS f (target, state, open_until, manual, opens, last_error, changed_at)
	VALUES ($1, 'open', CASE WHEN $2 > 0 THEN clock_timestamp() + $2::bigint * interval '1 millisecond' END,
		true, 1, 'opened by an operator', clock_timestamp())
	ON CONFLICT (target) DO UPDATE SET state = 'open', open_until = EXCLUDED.open_until, manual = true,
		probe_until = NULL, opens = f.opens + 1, last_error = EXCLUDED.last_error, changed_at = clock_timestamp()
	RETURNING ` + breakerColumnsOf("f") + `)
SELECT b.*, clock_timestamp() FROM b` + announceIf("true")

// closeBreakerSQL returns the breaker as it was before closing: the
// self-join reads the row's previous version.
var closeBreakerSQL = `/* flow.close_breaker */
WITH was AS (SELECT ` + breakerColumns + ` FROM flow_breakers WHERE target = $1 FOR UPDATE),
b AS (
	UPDATE flow_breakers f SET state = 'closed', failures = 0, window_start = NULL, open_until = NULL,
		probe_until = NULL, manual = false, changed_at = clock_timestamp()
	FROM was WHERE f.target = was.target
	RETURNING f.target)
SELECT was.*, clock_timestamp() FROM was JOIN b USING (target)` + announceIf("true")
