// Package testclock is a clock tests move by hand, safe for concurrent use.
package testclock

import (
	"sync"
	"time"
)

// Clock reads the time it was set to; Advance moves it.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// New returns a clock at 2026-01-02 03:04:05 UTC.
func New() *Clock { return &Clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
