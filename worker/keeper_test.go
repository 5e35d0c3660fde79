package worker

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
)

// fakeRenewer answers heartbeats from memory, recording when each came.
type fakeRenewer struct {
	mu    sync.Mutex
	calls []time.Time
	fail  bool
	lost  bool
}

func (f *fakeRenewer) renew(_ context.Context, ls []agentledger.Lease) (claims.HeartbeatResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, time.Now())
	switch {
	case f.fail:
		return claims.HeartbeatResult{}, errors.New("connection refused")
	case f.lost:
		return claims.HeartbeatResult{Lost: ls}, nil
	}
	return claims.HeartbeatResult{}, nil
}

func (f *fakeRenewer) set(fail, lost bool) {
	f.mu.Lock()
	f.fail, f.lost = fail, lost
	f.mu.Unlock()
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// Heartbeats every interval keep a long task alive indefinitely.
func TestKeeperRenewsOnSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeRenewer{}
		k := newKeeper(30*time.Second, 10*time.Second, f.renew, quiet())
		ctx, stop := context.WithCancel(t.Context())
		go k.run(ctx)
		task, cancel := context.WithCancelCause(t.Context())
		start := time.Now()
		k.add(agentledger.Lease{TaskID: 1, Token: 1}, start, cancel, new(agentledger.LeaseDeadline))

		time.Sleep(10 * time.Minute)
		synctest.Wait()
		if task.Err() != nil {
			t.Fatalf("task stopped despite renewals: %v", context.Cause(task))
		}
		if len(f.calls) != 60 {
			t.Fatalf("%d heartbeats in 10 minutes at 10s, want 60", len(f.calls))
		}
		for i, c := range f.calls {
			if want := start.Add(time.Duration(i+1) * 10 * time.Second); !c.Equal(want) {
				t.Fatalf("heartbeat %d at %v, want %v", i, c.Sub(start), want.Sub(start))
			}
		}
		k.remove(agentledger.Lease{TaskID: 1, Token: 1})
		stop()
	})
}

// When heartbeats fail, the task is stopped before its lease runs out:
// at the last successful renewal + lease - margin.
func TestKeeperStopsTaskBeforeLeaseExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeRenewer{}
		lease := 30 * time.Second
		k := newKeeper(lease, 10*time.Second, f.renew, quiet())
		ctx, stop := context.WithCancel(t.Context())
		go k.run(ctx)
		task, cancel := context.WithCancelCause(t.Context())
		start := time.Now()
		k.add(agentledger.Lease{TaskID: 1, Token: 1}, start, cancel, new(agentledger.LeaseDeadline))

		time.Sleep(25 * time.Second) // renewed at 10s and 20s
		synctest.Wait()
		f.set(true, false) // the database goes away
		lastRenewal := start.Add(20 * time.Second)
		deadline := lastRenewal.Add(lease - k.margin)

		<-task.Done()
		if !errors.Is(context.Cause(task), errLeaseExpiring) {
			t.Fatalf("cause %v", context.Cause(task))
		}
		if now := time.Now(); !now.Equal(deadline) || !now.Before(lastRenewal.Add(lease)) {
			t.Fatalf("stopped at %v after start, want %v (lease would expire at %v)",
				now.Sub(start), deadline.Sub(start), lastRenewal.Add(lease).Sub(start))
		}
		k.remove(agentledger.Lease{TaskID: 1, Token: 1})
		stop()
	})
}

// A heartbeat that finds the token taken stops the task with ErrLeaseLost.
func TestKeeperStopsTaskOnLostLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeRenewer{lost: true}
		k := newKeeper(30*time.Second, 10*time.Second, f.renew, quiet())
		ctx, stop := context.WithCancel(t.Context())
		go k.run(ctx)
		task, cancel := context.WithCancelCause(t.Context())
		start := time.Now()
		k.add(agentledger.Lease{TaskID: 7, Token: 3}, start, cancel, new(agentledger.LeaseDeadline))
		<-task.Done()
		if !errors.Is(context.Cause(task), agentledger.ErrLeaseLost) || time.Since(start) != 10*time.Second {
			t.Fatalf("cause %v after %v", context.Cause(task), time.Since(start))
		}
		k.remove(agentledger.Lease{TaskID: 7, Token: 3})
		stop()
	})
}

// An attempt that outlives its lease and is claimed again by the same
// worker: the new claim stops the old attempt, and the old attempt's exit
// leaves the new one's lease alone.
func TestKeeperNewClaimSupersedesOldAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeRenewer{}
		k := newKeeper(30*time.Second, 10*time.Second, f.renew, quiet())
		a1, cancel1 := context.WithCancelCause(t.Context())
		a2, cancel2 := context.WithCancelCause(t.Context())
		old := agentledger.Lease{TaskID: 5, Token: 1}
		cur := agentledger.Lease{TaskID: 5, Token: 2}
		k.add(old, time.Now(), cancel1, new(agentledger.LeaseDeadline))
		k.add(cur, time.Now(), cancel2, new(agentledger.LeaseDeadline))
		if !errors.Is(context.Cause(a1), agentledger.ErrLeaseLost) {
			t.Fatalf("old attempt cause %v, want ErrLeaseLost", context.Cause(a1))
		}
		k.remove(old)
		if ls := k.leases(); len(ls) != 1 || ls[0] != cur {
			t.Fatalf("leases after the old attempt left: %v", ls)
		}
		time.Sleep(20 * time.Second) // the current lease's watchdog still runs
		synctest.Wait()
		if a2.Err() != nil {
			t.Fatalf("current attempt stopped: %v", context.Cause(a2))
		}
		k.remove(cur)
	})
}

// Shutdown releases only attempts still working: one whose outcome is
// queued for writing is left to finish, so a succeeding task is not requeued.
func TestKeeperStopAllSkipsCompleting(t *testing.T) {
	k := newKeeper(30*time.Second, 10*time.Second, (&fakeRenewer{}).renew, quiet())
	working, cancelW := context.WithCancelCause(context.Background())
	done, cancelD := context.WithCancelCause(context.Background())
	w := agentledger.Lease{TaskID: 1, Token: 1}
	d := agentledger.Lease{TaskID: 2, Token: 1}
	k.add(w, time.Now(), cancelW, new(agentledger.LeaseDeadline))
	k.add(d, time.Now(), cancelD, new(agentledger.LeaseDeadline))
	k.completing(d)
	released := k.stopAll(errShutdown)
	if len(released) != 1 || released[0] != w || working.Err() == nil || done.Err() != nil {
		t.Fatalf("released %v; working stopped: %v; completing stopped: %v", released, working.Err(), done.Err())
	}
	k.remove(w)
	k.remove(d)
	cancelD(nil)
}

// The lease deadline an attempt's context carries holds while the keeper
// renews, moves on with each renewal, stops holding as the lease nears its
// end unrenewed — at once, whether or not the timer has fired — and ends
// when the lease is lost.
func TestKeeperLeaseDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeRenewer{}
		k := newKeeper(30*time.Second, 10*time.Second, f.renew, quiet())
		ctx, stop := context.WithCancel(t.Context())
		go k.run(ctx)
		_, cancel := context.WithCancelCause(t.Context())
		d := new(agentledger.LeaseDeadline)
		k.add(agentledger.Lease{TaskID: 1, Token: 1}, time.Now(), cancel, d)
		time.Sleep(time.Minute) // six renewals: far past the first claim's lease
		synctest.Wait()
		if !d.Holds() {
			t.Fatal("the deadline ended while the lease was renewed")
		}
		f.set(true, false) // renewals fail from now on
		time.Sleep(30 * time.Second)
		synctest.Wait()
		if d.Holds() {
			t.Fatal("the deadline holds past the lease's last renewal")
		}

		f.set(false, true) // the next renewal finds the lease taken
		_, cancel2 := context.WithCancelCause(t.Context())
		d2 := new(agentledger.LeaseDeadline)
		k.add(agentledger.Lease{TaskID: 2, Token: 1}, time.Now(), cancel2, d2)
		if !d2.Holds() {
			t.Fatal("a fresh claim's deadline does not hold")
		}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if d2.Holds() {
			t.Fatal("the deadline holds after the lease was lost")
		}
		stop()
	})
}

// A heartbeat that finds no lease for an attempt whose outcome is queued
// for writing (the outcome was written between the heartbeat's read of the
// leases and its statement) lost nothing: the attempt is not stopped, and
// no "lease lost" is logged. A working attempt's lost lease stops it.
func TestKeeperHeartbeatLeavesCompletingAlone(t *testing.T) {
	f := &fakeRenewer{lost: true}
	var log strings.Builder
	k := newKeeper(30*time.Second, 10*time.Second, f.renew, slog.New(slog.NewTextHandler(&log, nil)))
	working, cancelW := context.WithCancelCause(context.Background())
	done, cancelD := context.WithCancelCause(context.Background())
	w := agentledger.Lease{TaskID: 1, Token: 1}
	d := agentledger.Lease{TaskID: 2, Token: 1}
	k.add(w, time.Now(), cancelW, new(agentledger.LeaseDeadline))
	k.add(d, time.Now(), cancelD, new(agentledger.LeaseDeadline))
	k.completing(d)
	k.beat(context.Background())
	if !errors.Is(context.Cause(working), agentledger.ErrLeaseLost) || done.Err() != nil {
		t.Fatalf("working stopped by %v, completing stopped by %v; want only the working one, lease lost", context.Cause(working), context.Cause(done))
	}
	if n := strings.Count(log.String(), "lease lost"); n != 1 || !strings.Contains(log.String(), "task=1") {
		t.Fatalf("logged %q, want one lease lost, of task 1", log.String())
	}
	k.remove(w)
	k.remove(d)
	cancelD(nil)
}

// A cancel heard for a lease not held yet — the claim's answer not read
// back when the notice came — stops the attempt as soon as its lease is
// added; one older than a lease was some other pool's claim, and is
// forgotten once the memory is swept.
func TestKeeperCancelHeardBeforeTheClaimIsKept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := newKeeper(30*time.Second, 10*time.Second, (&fakeRenewer{}).renew, quiet())
		early := agentledger.Lease{TaskID: 7, Token: 3}
		k.cancelHeard(early)
		ctx, cancel := context.WithCancelCause(t.Context())
		k.add(early, time.Now(), cancel, new(agentledger.LeaseDeadline))
		if !errors.Is(context.Cause(ctx), agentledger.ErrCancelled) {
			t.Fatalf("attempt whose cancel came first: cause %v, want ErrCancelled", context.Cause(ctx))
		}
		k.remove(early)

		// Held: stopped at once.
		held := agentledger.Lease{TaskID: 8, Token: 1}
		ctx2, cancel2 := context.WithCancelCause(t.Context())
		k.add(held, time.Now(), cancel2, new(agentledger.LeaseDeadline))
		k.cancelHeard(held)
		if !errors.Is(context.Cause(ctx2), agentledger.ErrCancelled) {
			t.Fatalf("held attempt: cause %v, want ErrCancelled", context.Cause(ctx2))
		}
		k.remove(held)

		// Other pools' leases: swept once stale and the map is full.
		for i := range earlySweepMin {
			k.cancelHeard(agentledger.Lease{TaskID: int64(100 + i), Token: 1})
		}
		time.Sleep(31 * time.Second)
		k.cancelHeard(agentledger.Lease{TaskID: 99, Token: 1})
		k.mu.Lock()
		n := len(k.early)
		k.mu.Unlock()
		if n != 1 {
			t.Fatalf("%d cancels remembered after the sweep, want the fresh one alone", n)
		}
	})
}
