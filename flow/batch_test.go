package flow_test

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentledger/agentledger/flow"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

// counter records the calls let through and the booking statements of
// limiters.
type counter struct {
	mu       sync.Mutex
	at       []time.Time
	bookings []int // calls asked for by each allowed booking
	refused  int
}

func (c *counter) watch(l *flow.Limiter) {
	l.OnBooked(func(_ string, at time.Time) {
		c.mu.Lock()
		c.at = append(c.at, at)
		c.mu.Unlock()
	})
	l.OnBookings(func(_ string, n int, allowed bool) {
		c.mu.Lock()
		if allowed {
			c.bookings = append(c.bookings, n)
		} else {
			c.refused++
		}
		c.mu.Unlock()
	})
}

// inFlight is a database that counts its booking statements in flight.
type inFlight struct {
	flow.DB
	now, most atomic.Int32
}

func (d *inFlight) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if !strings.Contains(sql, "flow.take") {
		return d.DB.QueryRow(ctx, sql, args...)
	}
	n := d.now.Add(1)
	for m := d.most.Load(); n > m && !d.most.CompareAndSwap(m, n); m = d.most.Load() {
	}
	return inFlightRow{d.DB.QueryRow(ctx, sql, args...), d}
}

type inFlightRow struct {
	pgx.Row
	d *inFlight
}

func (r inFlightRow) Scan(dest ...any) error {
	defer r.d.now.Add(-1)
	return r.Row.Scan(dest...)
}

// maxIn is the most times of sorted at within any closed window of length w.
func maxIn(at []time.Time, w time.Duration) int {
	most, j := 0, 0
	for i := range at {
		for at[i].Sub(at[j]) > w {
			j++
		}
		most = max(most, i-j+1)
	}
	return most
}

// Three limiters (three daemons), eight goroutines each, hammer one target
// of 200/s with a burst of 3 for two seconds: the calls are booked in
// batches, one in flight per limiter at a time, and in no window of any length do more go through than GCRA
// lets through booked one by one (rate × window + burst) plus the calls of
// one batch window (a call may go through up to that late).
func TestBatchesNeverOverrun(t *testing.T) {
	t.Parallel()
	url := testdb.URL(t)
	putLimit(t, flow.NewStore(testdb.Open(t, url)), "mcp:shop", "200/s", 3)
	e := 5 * time.Millisecond
	tol := 2 * e

	var c counter
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	dbs := make([]*inFlight, 3)
	for i := range dbs {
		dbs[i] = &inFlight{DB: testdb.Open(t, url)}
		l := flow.NewLimiter(dbs[i], nil)
		c.watch(l)
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for l.Wait(ctx, "mcp:shop") == nil {
				}
			}()
		}
	}
	wg.Wait()

	for i, db := range dbs {
		if n := db.most.Load(); n != 1 {
			t.Errorf("limiter %d: %d bookings at once, want one at a time", i, n)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	slices.SortFunc(c.at, time.Time.Compare)
	if len(c.bookings) >= len(c.at) {
		t.Errorf("%d bookings for %d calls: not batched", len(c.bookings), len(c.at))
	}
	for _, n := range c.bookings {
		if n < 1 || n > int(flow.BatchWindow/e) {
			t.Errorf("a booking of %d calls: want 1..%d (the calls of a batch window)", n, flow.BatchWindow/e)
		}
	}
	for _, w := range []time.Duration{0, e, flow.BatchWindow, 200 * time.Millisecond, time.Second, 2 * time.Second} {
		gcra := int((w+tol)/e) + 1 // booked one by one
		bound := int((w+tol+flow.BatchWindow)/e) + 1
		got := maxIn(c.at, w)
		if got > bound {
			t.Errorf("%d calls within %v: more than %d (GCRA's %d and a batch window's %d)", got, w, bound, gcra, bound-gcra)
		}
		t.Logf("window %v: at most %d calls (GCRA one by one: %d, bound: %d)", w, got, gcra, bound)
	}
	t.Logf("%d calls, %d bookings (%d refused) in %v", len(c.at), len(c.bookings), c.refused, c.at[len(c.at)-1].Sub(c.at[0]))
}

// A rate that allows fewer than two calls in a batch window is booked one
// call at a time, as is Slack's default (50/min).
func TestLowRatesBookEachCall(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	s := flow.NewStore(db)
	putLimit(t, s, "mcp:shop", "20/s", 3)
	putLimit(t, s, "slack-channel:*", "50/min", 2)
	l := flow.NewLimiter(db, nil)
	var c counter
	c.watch(l)
	for _, target := range []string{"mcp:shop", "mcp:shop", "mcp:shop", "slack-channel:C1", "slack-channel:C1"} {
		if w, err := l.Take(ctx, target); w != 0 || err != nil {
			t.Fatalf("%s: wait %v, %v", target, w, err)
		}
	}
	if want := []int{1, 1, 1, 1, 1}; !slices.Equal(c.bookings, want) {
		t.Errorf("bookings of %v calls, want %v", c.bookings, want)
	}
}

// Changed drops the calls booked ahead: the next call books again.
func TestChangedDropsBatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	putLimit(t, flow.NewStore(db), "mcp:shop", "1000/s", 20)
	l := flow.NewLimiter(db, nil)
	var c counter
	c.watch(l)
	take := func(what string) {
		t.Helper()
		if w, err := l.Take(ctx, "mcp:shop"); w != 0 || err != nil {
			t.Fatalf("%s: wait %v, %v", what, w, err)
		}
	}
	take("call 1") // books 2
	take("call 2") // books 4 ahead
	take("call 3") // the first of the 4: 3 left
	c.mu.Lock()
	before := len(c.bookings)
	c.mu.Unlock()
	l.Changed()
	take("the call after Changed")
	c.mu.Lock()
	defer c.mu.Unlock()
	if !slices.Contains(c.bookings[before:], 2) {
		t.Errorf("bookings of %v calls, then %v after Changed; want a first batch (2) booked again", c.bookings[:before], c.bookings[before:])
	}
}

// When the database goes away, the calls booked before are spent and then
// every caller fails, the one that books and those waiting for it: no call
// goes through unbooked.
func TestBatchFailsClosed(t *testing.T) {
	t.Parallel()
	db := testdb.Open(t, testdb.URL(t))
	putLimit(t, flow.NewStore(db), "mcp:shop", "1000/s", 20)
	l := flow.NewLimiter(db, slog.New(slog.NewTextHandler(io.Discard, nil)))
	var c counter
	c.watch(l)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for range 5 { // a batch of 2, one of 4, maybe one of 8 booked ahead
		if w, err := l.Take(ctx, "mcp:shop"); w != 0 || err != nil {
			t.Fatalf("wait %v, %v", w, err)
		}
	}
	db.Close()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				w, err := l.Take(ctx, "mcp:shop")
				if err != nil {
					if ctx.Err() != nil {
						t.Error("takes on a closed pool did not fail in 10s")
					}
					return
				}
				time.Sleep(w)
			}
		}()
	}
	wg.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	booked := 0
	for _, n := range c.bookings {
		booked += n
	}
	if len(c.at) > booked {
		t.Errorf("%d calls through, %d booked", len(c.at), booked)
	}
	t.Logf("%d calls through of %d booked (bookings %v)", len(c.at), booked, c.bookings)
}

// A caller that takes one of the last calls of a batch starts booking the
// next one: the callers after it find calls left.
func TestBooksAhead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	putLimit(t, flow.NewStore(db), "mcp:shop", "1000/s", 20)
	l := flow.NewLimiter(db, nil)
	booked := make(chan int, 10)
	l.OnBookings(func(_ string, n int, allowed bool) {
		if allowed {
			booked <- n
		}
	})
	take := func(what string) {
		t.Helper()
		if w, err := l.Take(ctx, "mcp:shop"); w != 0 || err != nil {
			t.Fatalf("%s: wait %v, %v", what, w, err)
		}
	}
	expect := func(what string, n int) {
		t.Helper()
		select {
		case got := <-booked:
			if got != n {
				t.Fatalf("%s: a booking of %d calls, want %d", what, got, n)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no booking of %d calls", what, n)
		}
	}
	take("call 1")
	expect("call 1", 2)
	take("call 2, the batch's last") // books 4 ahead
	expect("call 2", 4)
	take("call 3")
	take("call 4, leaving half the batch") // books 8 ahead
	expect("call 4", 8)
}
