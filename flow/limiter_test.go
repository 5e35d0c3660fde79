package flow_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/flow"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

func putLimit(t *testing.T, s *flow.Store, target, rate string, burst int) {
	t.Helper()
	r, err := flow.ParseRate(rate)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(context.Background(), flow.Limit{Target: target, Rate: r, Burst: burst}); err != nil {
		t.Fatal(err)
	}
}

// Three limiters on three pools (three daemons) and eight goroutines each
// wait on one channel limited to 20/s: the bookings, on the database's
// clock, are at least 50 ms apart.
func TestSpacingAcrossDaemons(t *testing.T) {
	t.Parallel()
	url := testdb.URL(t)
	putLimit(t, flow.NewStore(testdb.Open(t, url)), "slack-channel:C1", "20/s", 1)

	var mu sync.Mutex
	var at []time.Time
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for range 3 {
		l := flow.NewLimiter(testdb.Open(t, url), nil)
		l.OnBooked(func(_ string, t time.Time) {
			mu.Lock()
			at = append(at, t)
			mu.Unlock()
		})
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for l.Wait(ctx, "slack-channel:C1") == nil {
				}
			}()
		}
	}
	wg.Wait()
	elapsed := time.Since(start)

	slices.SortFunc(at, time.Time.Compare)
	if len(at) < 2 {
		t.Fatalf("%d bookings in %v", len(at), elapsed)
	}
	for i := 1; i < len(at); i++ {
		if gap := at[i].Sub(at[i-1]); gap < 50*time.Millisecond-time.Microsecond {
			t.Errorf("bookings %d and %d only %v apart", i-1, i, gap)
		}
	}
	// At most one booking per emission over the run, and the first.
	if max := int(elapsed/(50*time.Millisecond)) + 1; len(at) > max {
		t.Errorf("%d bookings in %v: more than %d", len(at), elapsed, max)
	}
	t.Logf("%d bookings in %v", len(at), elapsed)
}

// A burst of 3 passes three calls at once, then one per emission.
func TestBurst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	putLimit(t, flow.NewStore(db), "mcp:shop", "1/min", 3)
	l := flow.NewLimiter(db, nil)
	for i := range 3 {
		if w, err := l.Take(ctx, "mcp:shop"); w != 0 || err != nil {
			t.Fatalf("call %d of the burst: wait %v, %v", i, w, err)
		}
	}
	w, err := l.Take(ctx, "mcp:shop")
	if err != nil || w < 50*time.Second || w > time.Minute {
		t.Errorf("the fourth call: wait %v, %v; want about a minute", w, err)
	}
}

// A kind's default limits each target of the kind on its own; a target's
// own limit wins over it; a target without either is not limited.
func TestKindDefaultPerTarget(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	s := flow.NewStore(db)
	putLimit(t, s, "slack-channel:*", "1/min", 1)
	putLimit(t, s, "slack-channel:C9", "1/min", 2)
	l := flow.NewLimiter(db, nil)
	for _, ch := range []string{"slack-channel:C1", "slack-channel:C2"} {
		if w, err := l.Take(ctx, ch); w != 0 || err != nil {
			t.Fatalf("first call to %s: wait %v, %v", ch, w, err)
		}
		if w, err := l.Take(ctx, ch); w == 0 || err != nil {
			t.Errorf("second call to %s: wait %v, %v; want refused", ch, w, err)
		}
	}
	for i := range 2 {
		if w, err := l.Take(ctx, "slack-channel:C9"); w != 0 || err != nil {
			t.Errorf("call %d to C9 (its own burst of 2): wait %v, %v", i, w, err)
		}
	}
	for range 5 {
		if w, err := l.Take(ctx, "mcp:shop"); w != 0 || err != nil {
			t.Fatalf("unlimited target: wait %v, %v", w, err)
		}
	}
	var n int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM flow_state`).Scan(&n); err != nil || n != 3 {
		t.Errorf("%d state rows (%v), want one per limited target taken", n, err)
	}
	if _, err := l.Take(ctx, "slack-channel:*"); !errors.Is(err, agentledger.ErrInvalid) {
		t.Errorf("take on a kind's default: %v", err)
	}
	if _, err := l.Take(ctx, "smtp:x"); !errors.Is(err, agentledger.ErrInvalid) {
		t.Errorf("take on an unknown kind: %v", err)
	}
}

// A database that cannot be read fails closed: Take returns the error and
// Wait does not return until its context ends.
func TestFailsClosed(t *testing.T) {
	t.Parallel()
	db := testdb.Open(t, testdb.URL(t))
	var logged bytes.Buffer
	l := flow.NewLimiter(db, slog.New(slog.NewTextHandler(&logged, nil)))
	db.Close()
	for range 2 {
		if _, err := l.Take(context.Background(), "slack-channel:C1"); err == nil {
			t.Fatal("take on a closed pool: no error")
		}
	}
	if n := strings.Count(logged.String(), "flow limit unavailable"); n != 1 {
		t.Errorf("logged %d times, want once a minute:\n%s", n, logged.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := l.Wait(ctx, "slack-channel:C1"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("wait on a closed pool: %v", err)
	}
}

// Stale limits serve while another caller reads them again; limits too
// old to trust (the database has not answered for twice CacheFor) make
// callers wait for the read.
func TestStaleLimitsServeDuringAReload(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	putLimit(t, flow.NewStore(db), "mcp:shop", "600/min", 1)
	l := flow.NewLimiter(db, nil)
	ctx := context.Background()
	if _, err := l.Take(ctx, "mcp:shop"); err != nil {
		t.Fatal(err)
	}
	release := l.HoldReload()
	defer release()
	l.AgeLimits(flow.CacheFor + time.Millisecond)
	if _, err := l.Take(ctx, "mcp:shop"); err != nil {
		t.Fatalf("stale limits during a reload: %v", err)
	}
	l.AgeLimits(2 * flow.CacheFor)
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := l.Take(short, "mcp:shop"); err == nil {
		t.Fatal("limits twice CacheFor old were used while the reload had not answered")
	}
}
