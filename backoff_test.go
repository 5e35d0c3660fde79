package agentledger

import (
	"testing"
	"time"
)

func TestBackoffDelay(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		r       float64
		attempt int32
		want    time.Duration
	}{
		{0.5, 1, time.Second}, {0.5, 2, 2 * time.Second}, {0.5, 4, 8 * time.Second},
		{0.5, 30, time.Hour}, {0, 1, 800 * time.Millisecond}, {1, 3, 4800 * time.Millisecond},
		{0.5, 0, time.Second},
	} {
		b := DefaultBackoff
		b.Rand = func() float64 { return tc.r }
		if got := b.Delay(tc.attempt); got != tc.want {
			t.Errorf("Delay(%d) with r=%v = %v, want %v", tc.attempt, tc.r, got, tc.want)
		}
	}
}
