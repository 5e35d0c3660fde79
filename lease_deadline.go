package agentledger

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// LeaseDeadline is the moment, on this process's monotonic clock, by which
// an attempt must stop acting on its lease: its worker sets it at the
// claim and moves it on at each renewal, a little before the database
// would let the lease lapse, and ends it when the attempt is stopped (its
// lease lost or its task cancelled). It answers at once, without the
// database: the ledger reads it before a call it makes without a fenced
// look-up (a keyed effect on its generation's first claim), so that an
// attempt that outlived its lease — a process stopped and resumed, a
// stalled machine — does not send it. It also keeps the keys the attempt
// sent so (Unlooked). Safe for concurrent use.
type LeaseDeadline struct {
	at atomic.Pointer[time.Time] // nil: not set, or ended

	mu   sync.Mutex
	sent map[string]struct{} // keys Unlooked let go out
}

// Unlooked reports whether the effect key may go out without a look-up in
// this attempt: only the first time the attempt asks. A second call under
// the same key in one attempt (a journal place used twice) must look, as
// a later attempt would: the first call's row may be there, and a
// different request under the key is then refused before it is sent.
func (d *LeaseDeadline) Unlooked(key string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.sent[key]; ok {
		return false
	}
	if d.sent == nil {
		d.sent = map[string]struct{}{}
	}
	d.sent[key] = struct{}{}
	return true
}

// Set moves the deadline to t, a time read from time.Now (its monotonic
// reading is what Holds compares).
func (d *LeaseDeadline) Set(t time.Time) { d.at.Store(&t) }

// End ends the lease now: Holds reports false from here on.
func (d *LeaseDeadline) End() { d.at.Store(nil) }

// Holds reports whether the deadline is set and still ahead.
func (d *LeaseDeadline) Holds() bool {
	at := d.at.Load()
	return at != nil && time.Now().Before(*at)
}

type leaseDeadlineKey struct{}

// WithLeaseDeadline returns ctx carrying d, the deadline of the attempt
// ctx runs.
func WithLeaseDeadline(ctx context.Context, d *LeaseDeadline) context.Context {
	return context.WithValue(ctx, leaseDeadlineKey{}, d)
}

// LeaseDeadlineOf returns the deadline ctx carries, nil when it carries
// none (code not run by a worker: then nothing may rely on it).
func LeaseDeadlineOf(ctx context.Context) *LeaseDeadline {
	d, _ := ctx.Value(leaseDeadlineKey{}).(*LeaseDeadline)
	return d
}
