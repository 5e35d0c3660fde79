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

// bookAheadTimeout bounds a booking made ahead, which no caller's context
// ends.
const bookAheadTimeout = 10 * time.Second

// firstBatch is the size of a target's first booking: the next doubles
// while none of the calls booked is dropped, and falls to the calls spent
// when some are, so that a daemon holds about what it uses.
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
	next      *batch    // booked while b ran low, spent once b is
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
	dropped   int
}

// newBatch keeps the n calls of booking bk, the first of them spent when
// the caller that booked them takes it at once.
func newBatch(lim Limit, n int, bk booking, spent int) *batch {
	return &batch{rate: lim.Rate, burst: lim.Burst, e: lim.Rate.Emission(), tol: lim.tolerance(),
		start: bk.local.Add(bk.start.Sub(bk.at)), at: bk.at, local: bk.local,
		n: n, next: spent, spent: spent}
}

// under reports whether b was booked under lim.
func (b *batch) under(lim Limit) bool { return b.rate == lim.Rate && b.burst == lim.Burst }

// take spends b's next call if its time has come and returns 0, or returns
// how long until it comes; ok is false when b has no call left.
func (b *batch) take(now time.Time) (wait time.Duration, ok bool) {
	if late := now.Sub(b.start) - batchWindow; late > 0 {
		// Drop the calls late by more than batchWindow.
		if first := min(int((late+b.e-1)/b.e), b.n); first > b.next {
			b.dropped += first - b.next
			b.next = first
		}
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

// low reports whether b is running out at now: half its calls left, or
// half a batch window before its last call is dropped. (Half: a booking
// can take tens of milliseconds on a busy server.)
func (b *batch) low(now time.Time) bool {
	end := b.start.Add(time.Duration(b.n-1)*b.e + batchWindow)
	return 2*(b.n-b.next) <= b.n || end.Sub(now) <= batchWindow/2
}

// nextSize is the size of the booking after b: twice b's while none of
// b's calls was dropped, else the calls b spent.
func (b *batch) nextSize() int {
	if b.dropped == 0 {
		return min(2*b.n, maxBatch)
	}
	return max(b.spent, 1)
}

// takeBatched takes a call on target, whose limit lim allows batches: from
// the calls booked ahead, else by booking more. One booking per target is
// in flight at a time: a caller that takes one of the last calls of a
// batch starts booking the next (bookAhead) while the others spend what
// is left; the callers that find nothing left wait for the booking.
func (l *Limiter) takeBatched(ctx context.Context, target string, lim Limit) (time.Duration, error) {
	for {
		l.mu.Lock()
		st := l.stateOf(target)
		now := time.Now()
		for st.b != nil || st.next != nil {
			if st.b == nil {
				st.b, st.next = st.next, nil
			}
			b := st.b
			if !b.under(lim) { // booked under a limit no longer in force
				st.b, st.next = nil, nil
				break
			}
			wait, ok := b.take(now)
			if !ok {
				st.size, st.b = b.nextSize(), nil
				continue
			}
			ahead := wait == 0 && st.next == nil && st.flight == nil && !now.Before(st.notBefore) && b.low(now)
			var f *refill
			n, gen := min(b.nextSize(), batchCap(lim)), l.gen
			if ahead {
				f = &refill{done: make(chan struct{})}
				st.flight = f
			}
			l.mu.Unlock()
			if wait == 0 {
				l.tell(target, b.at.Add(now.Sub(b.local)))
			}
			if ahead {
				go l.bookAhead(ctx, target, lim, st, f, n, gen)
			}
			return wait, nil
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
		bk, err := l.refill(ctx, target, lim, st, f, n, gen, 1)
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

// bookAhead books the n calls after those being spent, in flight f, on
// its own: no caller waits for it unless the calls left run out first. It
// outlives the caller that started it (others may wait for it), for at
// most bookAheadTimeout.
func (l *Limiter) bookAhead(ctx context.Context, target string, lim Limit, st *batchState, f *refill, n int, gen uint64) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bookAheadTimeout)
	defer cancel()
	if _, err := l.refill(ctx, target, lim, st, f, n, gen, 0); err != nil && ctx.Err() == nil {
		l.logError(target, err)
	}
}

// refill books n calls on target as st's flight f and keeps them: as st's
// batch with the first spent by the caller (spent 1), or as the batch
// after the one being spent (spent 0). Calls booked before a Changed after
// gen are not kept.
func (l *Limiter) refill(ctx context.Context, target string, lim Limit, st *batchState, f *refill, n int, gen uint64, spent int) (booking, error) {
	bk, err := l.book(ctx, target, lim, n)
	l.mu.Lock()
	st.flight = nil
	kept := gen == l.gen
	switch {
	case err != nil && ctx.Err() == nil:
		f.err = err // the database's error, the waiters' too: fail closed
	case err != nil:
	case !bk.allowed && kept:
		st.notBefore = bk.local.Add(bk.wait)
	case bk.allowed && kept && spent == 0:
		st.next = newBatch(lim, n, bk, 0)
	case bk.allowed && kept:
		st.b = newBatch(lim, n, bk, spent)
	}
	l.mu.Unlock()
	close(f.done)
	return bk, err
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
