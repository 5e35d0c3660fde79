package agentledger

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff computes the delay before a failed task's next attempt:
// Base·2^(attempt-1), capped at Max, then spread by ±Jitter so that tasks
// failing together do not retry together.
type Backoff struct {
	Base   time.Duration
	Max    time.Duration
	Jitter float64 // fraction in [0, 1)

	// Rand returns a float in [0, 1); nil uses math/rand/v2. Tests inject a
	// fixed source.
	Rand func() float64
}

// DefaultBackoff: 1s, 2s, 4s … capped at one hour, ±20%.
var DefaultBackoff = Backoff{Base: time.Second, Max: time.Hour, Jitter: 0.2}

// Delay returns the delay after the given failed attempt (1-based).
func (b Backoff) Delay(attempt int32) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	d := b.Base
	for i := int32(1); i < attempt && d < b.Max; i++ {
		d *= 2
	}
	if d > b.Max {
		d = b.Max
	}
	if b.Jitter > 0 {
		r := rand.Float64
		if b.Rand != nil {
			r = b.Rand
		}
		d = time.Duration(float64(d) * (1 + b.Jitter*(2*r()-1)))
	}
	return d
}

// Wait waits out the delay after the given failed attempt; false if ctx
// ended first.
func (b Backoff) Wait(ctx context.Context, attempt int32) bool {
	return Sleep(ctx, b.Delay(attempt))
}

// Sleep waits d, or until ctx ends (false).
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
