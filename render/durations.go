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

// Relative says how far t is from now: "in 5m" or "3s ago". A time ahead
// from an hour on is said in two units ("in 1h59m", "in 6d23h"): a
// deadline or an expiry rounded down to its largest unit would read
// nearly a unit sooner than it is.
func Relative(t, now time.Time) string {
	if d := t.Sub(now); d > 0 {
		return "in " + ahead(d)
	}
	return Short(now.Sub(t)) + " ago"
}

// ahead is Short with the next unit down after hours or days, when it is
// not zero.
func ahead(d time.Duration) string {
	d = d.Round(time.Second)
	const day = 24 * time.Hour
	switch {
	case d < time.Hour:
		return Short(d)
	case d < 48*time.Hour:
		if m := (d % time.Hour) / time.Minute; m > 0 {
			return fmt.Sprintf("%dh%dm", int(d/time.Hour), m)
		}
	default:
		if h := (d % day) / time.Hour; h > 0 {
			return fmt.Sprintf("%dd%dh", int(d/day), h)
		}
	}
	return Short(d)
}

// Expiry is when a worker's next lease runs out, relative to now, or "-"
// when it holds none (t is zero).
func Expiry(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return Relative(t, now)
}
