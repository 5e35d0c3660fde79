package render

import (
	"fmt"
	"time"
)

// Short formats a duration, rounded to the second, in its largest whole
// unit: 45s, 12m, 3h, 5d.
func Short(d time.Duration) string {
	d = d.Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	default:
		return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
	}
}

// Relative says how far t is from now: "in 5m" or "3s ago".
func Relative(t, now time.Time) string {
	if d := t.Sub(now); d > 0 {
		return "in " + Short(d)
	}
	return Short(now.Sub(t)) + " ago"
}

// Expiry is when a worker's next lease runs out, relative to now, or "-"
// when it holds none (t is zero).
func Expiry(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return Relative(t, now)
}
