package worker

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/registry"
)

// queueSlots are one queue's slots: its claim loop's semaphore, which an
// enqueue of this process shares through Reserve while the loop is idle.
type queueSlots struct {
	sem   chan struct{} // one value a running task (or a reserved slot)
	freed chan struct{} // a slot freed since the loop last looked
	mu    sync.Mutex
	// idle: the loop's last claim took every due task it could, and it
	// waits for news. It is cleared, under mu, before the loop counts its
	// free slots again and when it stops, so a slot reserved before then
	// is counted and none is reserved after.
	idle bool
}

func newQueueSlots(n int) *queueSlots {
	return &queueSlots{sem: make(chan struct{}, n), freed: make(chan struct{}, 1)}
}

func (s *queueSlots) setIdle(idle bool) {
	s.mu.Lock()
	s.idle = idle
	s.mu.Unlock()
}

// free gives a slot back and tells the loop.
func (s *queueSlots) free() {
	<-s.sem
	select {
	case s.freed <- struct{}{}:
	default:
	}
}

// Reserve holds a slot of queue for a task of kind needing needs when
// the pool would run such a task now (claims.Starter): it claims from
// queue, serves kind, has what the task needs, and the queue's claim
// loop is idle with a slot free. An idle loop found no due task it could
// take at its last claim, so the task jumps ahead of nothing this pool
// would have run (save tasks queued since that claim, which its next one
// takes).
func (p *Pool) Reserve(queue, kind string, needs []string) (claims.Slot, bool) {
	s := p.slots[queue]
	if s == nil || (len(p.kindNames) > 0 && !slices.Contains(p.kindNames, kind)) {
		return nil, false
	}
	if caps := p.claimCaps(); caps != nil && len(needs) > 0 && len(registry.Missing(needs, caps)) > 0 {
		return nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.idle || p.stopping.Load() {
		return nil, false
	}
	select {
	case s.sem <- struct{}{}:
	default:
		return nil, false
	}
	p.tasks.Add(1) // before the loop stops (idle), so before shutdown waits for the tasks
	return &slot{p: p, q: queue, s: s}, true
}

// Queued wakes queue's claim loop, which is no longer idle: a task due
// now was queued there by this process rather than started (claims.Starter).
// The loop claims it as it would on its notification, which a pool that
// only polls never gets.
func (p *Pool) Queued(queue string) {
	s := p.slots[queue]
	if s == nil {
		return
	}
	s.setIdle(false)
	select {
	case p.wake[queue] <- struct{}{}:
	default:
	}
}

// slot is a slot Reserve holds.
type slot struct {
	p    *Pool
	q    string
	s    *queueSlots
	once sync.Once
}

func (s *slot) Lease() (string, time.Duration) { return s.p.cfg.ID, s.p.cfg.Lease }

func (s *slot) Takes() (kinds, caps []string) { return s.p.kindNames, s.p.claimCaps() }

// Start runs t, or, when the pool began to stop while t was inserted,
// gives its lease back at once (fenced on its token; the attempt is not
// counted): shutdown has already released the leases it held, or soon
// will without this one.
func (s *slot) Start(t *agentledger.Task, sentAt time.Time) {
	s.once.Do(func() {
		if s.p.stopping.Load() {
			defer s.p.tasks.Done()
			defer s.s.free()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := s.p.store.Release(ctx, claims.LeaseOf(t)); err != nil {
				s.p.taskLog(t).Warn("releasing a task started as the pool stopped failed; its lease expires on its own", "err", err)
				return
			}
			s.p.taskLog(t).Info("task started at its enqueue as the pool stopped: its lease given back, for another claim")
			return
		}
		s.p.cfg.Observer.Claimed(s.q, 1)
		if o, ok := s.p.cfg.Observer.(StartObserver); ok {
			o.StartedAtEnqueue(s.q)
		}
		s.p.begin(s.p.work, t, sentAt, s.s.free)
	})
}

func (s *slot) Release() {
	s.once.Do(func() {
		s.s.free()
		s.p.tasks.Done()
	})
}

var _ claims.Starter = (*Pool)(nil)
