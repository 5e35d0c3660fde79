package flow

// BatchWindow is batch.go's batchWindow.
const BatchWindow = batchWindow

// OnBookings sets a hook told of every booking statement l's database
// answered: the calls it asked for and whether they were booked.
func (l *Limiter) OnBookings(f func(target string, n int, allowed bool)) { l.bookings = f }
