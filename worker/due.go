package worker

import (
	"sync"
	"time"
)

// dueGranularity spaces the wake-ups for waiting tasks' deadlines: timers
// due within it of each other are woken by one statement, so a thousand
// timers a second cost a hundred cheap statements, not a thousand, and
// fire at most this late for it.
const dueGranularity = 10 * time.Millisecond

// dueAt is the earliest deadline of a queue's waiting tasks that this pool
// knows of: from its last WakeDueNext, and from tasks it parked or
// deferred since (a deferral's task is claimed then, a parked one woken).
// Another daemon's reach it at its next poll.
type dueAt struct {
	mu     sync.Mutex
	at     time.Time     // zero: none known
	sooner chan struct{} // a park brought it forward
}

func newDueAt() *dueAt { return &dueAt{sooner: make(chan struct{}, 1)} }

// set replaces the known deadline (WakeDueNext read the table).
func (d *dueAt) set(t time.Time) {
	d.mu.Lock()
	d.at = t
	d.mu.Unlock()
}

// offer brings the deadline forward to t if t is earlier, and tells the
// queue's loop.
func (d *dueAt) offer(t time.Time) {
	d.mu.Lock()
	earlier := d.at.IsZero() || t.Before(d.at)
	if earlier {
		d.at = t
	}
	d.mu.Unlock()
	if earlier {
		select {
		case d.sooner <- struct{}{}:
		default:
		}
	}
}

func (d *dueAt) get() time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.at
}

// armDue sets timer to fire at the deadline at (none if zero), no sooner
// than dueGranularity from now.
func armDue(timer *time.Timer, at time.Time) {
	timer.Stop()
	if at.IsZero() {
		return
	}
	timer.Reset(max(time.Until(at), dueGranularity))
}
