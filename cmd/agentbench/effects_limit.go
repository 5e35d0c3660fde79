package main

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger/flow"
)

// limitCheck books the charge tool's calls (--tool custom with
// --limit-rate) on the downstream's rate limit, as the gate http_request
// passes (the daemon's flow.Limiter.Admit) books its own: Take until it
// lets the call through, waiting as it says. It times each check.
type limitCheck struct {
	l      *flow.Limiter
	target string

	mu   sync.Mutex
	took []time.Duration
}

func newLimitCheck(db *pgxpool.Pool, target string) *limitCheck {
	return &limitCheck{l: flow.NewLimiter(db, nil), target: target}
}

// take books one call, waiting for the limit as long as it says.
func (c *limitCheck) take(ctx context.Context) error {
	start := time.Now()
	for {
		wait, err := c.l.Take(ctx, c.target)
		if err != nil {
			return err
		}
		if wait == 0 {
			break
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	d := time.Since(start)
	c.mu.Lock()
	c.took = append(c.took, d)
	c.mu.Unlock()
	return nil
}

// quantiles returns the checks' durations at qs (0..1); nil without
// checks.
func (c *limitCheck) quantiles(qs ...float64) []time.Duration {
	c.mu.Lock()
	took := slices.Clone(c.took)
	c.mu.Unlock()
	if len(took) == 0 {
		return nil
	}
	slices.Sort(took)
	out := make([]time.Duration, len(qs))
	for i, q := range qs {
		out[i] = took[min(int(q*float64(len(took))), len(took)-1)]
	}
	return out
}

// bookingsSQL counts the rows written to flow_state (each booking the
// database let through writes one), from the statistics: read it once the
// workers have disconnected, so that theirs are flushed.
const bookingsSQL = `SELECT coalesce(sum(n_tup_ins + n_tup_upd), 0)::bigint FROM pg_stat_user_tables WHERE relname = 'flow_state'`
