package flow

import "time"

// OnBooked sets a hook told the database time of every booking l makes.
func (l *Limiter) OnBooked(f func(target string, at time.Time)) { l.booked = f }
