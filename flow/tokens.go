package flow

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// A model endpoint's token rate is a bucket of one unit's tokens (a
// minute's, for N/min) refilled at the rate, as providers count them:
// GCRA with a cost per call and a tolerance of one unit. A call is let
// through while the bucket is not empty; what it spent is known only when
// it returns, and is booked then, even past the budget, so that the next
// calls wait for the overdraft to refill. The fleet spends at most the
// rate plus one unit's tokens plus one call's in any unit of time.

// tokensKey is the state row of target's tokens in flow_state.
func tokensKey(target string) string { return target + "#tokens" }

// tokensWait returns how long until target's token bucket is not empty.
func (l *Limiter) tokensWait(ctx context.Context, target string, r Rate) (time.Duration, error) {
	var micros int64
	err := l.db.QueryRow(ctx, tokensWaitSQL, tokensKey(target), r.Per.Microseconds()).Scan(&micros)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("token budget of %s: %w", target, err)
	case micros <= 0:
		return 0, nil
	}
	return max(time.Duration(micros)*time.Microsecond, minWait), nil
}

// spendTokens books n tokens on target's bucket.
func (l *Limiter) spendTokens(ctx context.Context, target string, r Rate, n int64) error {
	// One token's emission in nanoseconds may be below a microsecond:
	// book n tokens' time at once, rounded up.
	cost := (time.Duration(n)*r.Per + time.Duration(r.N) - 1) / time.Duration(r.N)
	if _, err := l.db.Exec(ctx, spendTokensSQL, tokensKey(target), max(cost.Microseconds(), 1)); err != nil {
		return fmt.Errorf("token budget of %s: %w", target, err)
	}
	return nil
}

const tokensWaitSQL = `/* flow.tokens_wait */
SELECT ceil(extract(epoch FROM tat - $2::bigint * interval '1 microsecond' - clock_timestamp()) * 1000000)::bigint
FROM flow_state WHERE target = $1`

const spendTokensSQL = `/* flow.tokens_spend */
WITH async AS (SELECT set_config('synchronous_commit', 'off', true))
INSERT INTO flow_state AS s (target, tat) SELECT $1, clock_timestamp() + $2::bigint * interval '1 microsecond' FROM async
ON CONFLICT (target) DO UPDATE SET tat = greatest(s.tat, clock_timestamp()) + $2::bigint * interval '1 microsecond'`
