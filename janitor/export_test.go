package janitor

import (
	"context"
	"time"
)

// SetClock replaces the janitor's clock and its pause between batches,
// for tests that measure the pacing without waiting for it.
func (j *Janitor) SetClock(now func() time.Time, pause func(context.Context, time.Duration) bool) {
	j.now, j.pause = now, pause
}
