package flow

import (
	"context"
	"time"
)

// A target whose rate allows two calls or more within batchWindow is booked
// in batches: one statement books several calls (the theoretical arrival
// time moves by as many emissions) and the Limiter hands them out itself,
// each no earlier than GCRA would have let it through had it been booked
// alone. The calls of a batch not spent within batchWindow of their time
// are dropped: capacity lost, never capacity gained. See the package
// comment for what this costs in precision.

// batchWindow is how much of a target's rate one booking may take, and how
// late a call booked ahead may still go through.
const batchWindow = 50 * time.Millisecond

// maxBatch bounds the calls one booking takes.
const maxBatch = 100

// firstBatch is the size of a target's first booking: the next doubles
// while every call booked is spent, and falls to the calls spent when some
// were dropped, so that a daemon holds about what it uses.
const firstBatch = 2

// batchCap is the most calls one booking may take on a target under lim:
// the calls of batchWindow at its rate, at most maxBatch. Below 2 each call
// is booked on its own.
func batchCap(lim Limit) int {
	return int(min(batchWindow/lim.Rate.Emission(), maxBatch))
}

// batchState is what a Limiter keeps of one batched target.
type batchState struct {
	b         *batch    // the calls booked ahead; nil: none
	size      int       // the calls the next booking asks for
	notBefore time.Time // a booking is refused until then (this clock)
	flight    *refill   // the booking in flight, if any
}

// refill is a booking in flight: the other callers wait for it rather than
// book too.
type refill struct {
	done chan struct{}
	err  error // the booking's error, unless its own caller went away
}

// batch is the calls one statement booked. Call i's theoretical arrival
// time is start + i·emission; like a call booked alone it may go through
// one tolerance (the burst) before it, and it is dropped once it is more
// than batchWindow late.
type batch struct {
	rate  Rate // the limit booked under
	burst int
	e     time.Duration
	tol   time.Duration
	// start is call 0's theoretical arrival time on this process's clock:
	// the database's start, seen from when its answer arrived (so never
	// earlier than on the database's clock).
	start time.Time
	// at and local are the booking's time on the database's clock and on
	// this process's, to tell tests when a call went through.
	at, local time.Time
	n, next   int // calls booked; the first not yet spent or dropped
	spent     int
}

func newBatch(lim Limit, n int, bk booking) *batch {
	return &batch{rate: lim.Rate, burst: lim.Burst, e: lim.Rate.Emission(), tol: lim.tolerance(),
		start: bk.local.Add(bk.start.Sub(bk.at)), at: bk.at, local: bk.local,
		n: n, next: 1, spent: 1} // call 0 is the booking caller's
}

// take spends b's next call if its time has come and returns 0, or returns
// how long until it comes; ok is false when b has no call left.
func (b *batch) take(now time.Time) (wait time.Duration, ok bool) {
	if late := now.Sub(b.start) - batchWindow; late > 0 {
		b.next = max(b.next, int((late+b.e-1)/b.e)) // drop the calls late by more than batchWindow
	}
	if b.next >= b.n {
		return 0, false
	}
	if due := b.start.Add(time.Duration(b.next)*b.e - b.tol); due.After(now) {
		return due.Sub(now), true
	}
	b.next++
	b.spent++
	return 0, true
}

// nextSize is the size of the booking after b.
func (b *batch) nextSize() int {
	if b.spent == b.n {
		return min(2*b.n, maxBatch)
	}
	return max(b.spent, 1)
}

// takeBatched takes a call on target, whose limit lim allows batches: from
// the calls booked ahead, else by booking more. One booking per target is
// in flight at a time; the callers that come meanwhile wait for it.
func (l *Limiter) takeBatched(ctx context.Context, target string, lim Limit) (time.Duration, error) {
	for {
		l.mu.Lock()
		st := l.stateOf(target)
		now := time.Now()
		if b := st.b; b != nil && (b.rate != lim.Rate || b.burst != lim.Burst) {
			st.b = nil // booked under a limit no longer in force
		} else if b != nil {
			wait, ok := b.take(now)
			if ok {
				l.mu.Unlock()
				if wait == 0 {
					l.tell(target, b.at.Add(now.Sub(b.local)))
				}
				return wait, nil
			}
			st.size, st.b = b.nextSize(), nil
		}
		if f := st.flight; f != nil {
			l.mu.Unlock()
			select {
			case <-f.done:
			case <-ctx.Done():
				return 0, ctx.Err()
			}
			if f.err != nil {
				return 0, f.err
			}
			continue
		}
		if wait := st.notBefore.Sub(now); wait > 0 {
			l.mu.Unlock()
			return wait, nil
		}
		f := &refill{done: make(chan struct{})}
		st.flight = f
		n, gen := min(st.size, batchCap(lim)), l.gen
		l.mu.Unlock()

		bk, err := l.book(ctx, target, lim, n)

		l.mu.Lock()
		st.flight = nil
		kept := gen == l.gen // not dropped by Changed meanwhile
		switch {
		case err != nil && ctx.Err() == nil:
			f.err = err // the database's error, the waiters' too: fail closed
		case err != nil:
		case !bk.allowed && kept:
			st.notBefore = bk.local.Add(bk.wait)
		case bk.allowed && kept:
			st.b = newBatch(lim, n, bk)
		}
		l.mu.Unlock()
		close(f.done)
		switch {
		case err != nil:
			return 0, err
		case !bk.allowed:
			return bk.wait, nil
		}
		l.tell(target, bk.at)
		return 0, nil
	}
}

// stateOf returns target's batch state, made on first use; l.mu is held.
func (l *Limiter) stateOf(target string) *batchState {
	if l.batches == nil {
		l.batches = map[string]*batchState{}
	}
	st := l.batches[target]
	if st == nil {
		st = &batchState{size: firstBatch}
		l.batches[target] = st
	}
	return st
}
