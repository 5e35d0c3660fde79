package flow

import "time"

// OnBooked sets a hook told the database time of every booking l makes.
func (l *Limiter) OnBooked(f func(target string, at time.Time)) { l.booked = f }

// AgeLimits makes l's cached limits d old.
func (l *Limiter) AgeLimits(d time.Duration) {
	l.limits.age(d)
}

// HoldReload stands for a caller reading the limits again, until the
// returned function is called.
func (l *Limiter) HoldReload() func() {
	l.limits.sem <- struct{}{}
	return func() { <-l.limits.sem }
}

// LeaseSlotsFor makes l lease its concurrency slots for d between renewals.
func (l *Limiter) LeaseSlotsFor(d time.Duration) { l.slotLease = d }
