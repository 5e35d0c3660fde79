package worker

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
)

// errLeaseExpiring is the cause given to a task whose lease could not be
// renewed in time: it is stopped before another worker may claim it.
var errLeaseExpiring = errors.New("lease could not be renewed before expiry: stopping the attempt")

// renewFunc renews leases by the lease duration (claims.Store.Heartbeat).
type renewFunc func(ctx context.Context, leases []agentledger.Lease) (claims.HeartbeatResult, error)

// keeper holds the leases of running tasks: it renews them in one statement
// per interval and cancels a task's context when its lease is lost, when an
// operator cancels it, or shortly before the lease would expire unrenewed.
//
// Deadlines are measured on this process's monotonic clock from the moment
// the claim or heartbeat was *sent*; the database sets expiry from its own
// now() when the statement runs, which is later, so the local deadline is
// always the earlier one.
type keeper struct {
	lease    time.Duration
	interval time.Duration
	margin   time.Duration // stop this long before the lease runs out
	renew    renewFunc
	log      *slog.Logger

	mu      sync.Mutex
	running map[agentledger.Lease]*leased // by lease, not task: an attempt
	// that outlives its lease must never drop the entry of the next one
	newest map[int64]agentledger.Lease // per task, the lease added last
	// early holds the cancels heard for leases not held (yet), with when:
	// a cancel of a task claimed a moment ago can arrive before the claim's
	// answer has added its lease. add honours one; entries older than a
	// lease are dropped (that claim was someone else's: every pool hears
	// every cancel) once the map holds earlySweepAt.
	early        map[agentledger.Lease]time.Time
	earlySweepAt int
}

// earlySweepMin is the least size at which keeper.early is swept: a sweep
// reads every entry, so it runs only when the map doubled since the last.
const earlySweepMin = 1024

type leased struct {
	lease      agentledger.Lease
	cancel     context.CancelCauseFunc
	deadline   *agentledger.LeaseDeadline // the timer's moment, for reads that cannot wait for it to fire
	timer      *time.Timer
	completing bool // the outcome is queued for writing: shutdown leaves it be
}

func newKeeper(lease, interval time.Duration, renew renewFunc, log *slog.Logger) *keeper {
	margin := lease / 5
	if margin > 5*time.Second {
		margin = 5 * time.Second
	}
	return &keeper{lease: lease, interval: interval, margin: margin, renew: renew, log: log,
		running: map[agentledger.Lease]*leased{}, newest: map[int64]agentledger.Lease{},
		early: map[agentledger.Lease]time.Time{}, earlySweepAt: earlySweepMin}
}

// add starts keeping l, claimed by a statement sent at sentAt. An earlier
// attempt of the same task still held here has lost its lease — the new
// claim proves it — and is stopped.
func (k *keeper) add(l agentledger.Lease, sentAt time.Time, cancel context.CancelCauseFunc, deadline *agentledger.LeaseDeadline) {
	e := &leased{lease: l, deadline: deadline}
	e.cancel = func(cause error) { deadline.End(); cancel(cause) }
	deadline.Set(sentAt.Add(k.lease - k.margin))
	e.timer = time.AfterFunc(time.Until(sentAt.Add(k.lease-k.margin)), func() { e.cancel(errLeaseExpiring) })
	k.mu.Lock()
	stale := k.running[k.newest[l.TaskID]]
	k.running[l] = e
	k.newest[l.TaskID] = l
	_, cancelled := k.early[l]
	delete(k.early, l)
	k.mu.Unlock()
	if stale != nil && stale.lease.Token < l.Token {
		stale.cancel(agentledger.ErrLeaseLost)
	}
	if cancelled {
		e.cancel(agentledger.ErrCancelled)
	}
}

// cancelHeard stops the attempt holding l, an operator having cancelled
// it (claims.CancelChannel), or remembers the cancel for add when no
// attempt holds l yet.
func (k *keeper) cancelHeard(l agentledger.Lease) {
	k.mu.Lock()
	if _, held := k.running[l]; !held {
		now := time.Now()
		if len(k.early) >= k.earlySweepAt {
			for old, at := range k.early {
				if now.Sub(at) > k.lease {
					delete(k.early, old)
				}
			}
			k.earlySweepAt = max(earlySweepMin, 2*len(k.early))
		}
		k.early[l] = now
		k.mu.Unlock()
		return
	}
	k.mu.Unlock()
	k.stop(l, agentledger.ErrCancelled)
}

// remove stops keeping l (its outcome is recorded or it was lost).
func (k *keeper) remove(l agentledger.Lease) {
	k.mu.Lock()
	e := k.running[l]
	delete(k.running, l)
	if k.newest[l.TaskID] == l {
		delete(k.newest, l.TaskID)
	}
	k.mu.Unlock()
	if e != nil {
		e.timer.Stop()
	}
}

// leases returns the leases held now.
func (k *keeper) leases() []agentledger.Lease {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make([]agentledger.Lease, 0, len(k.running))
	for _, e := range k.running {
		out = append(out, e.lease)
	}
	return out
}

// count returns how many leases are held.
func (k *keeper) count() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.running)
}

// run renews leases every interval until ctx is done.
func (k *keeper) run(ctx context.Context) {
	t := time.NewTicker(k.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			k.beat(ctx)
		}
	}
}

// beat renews every held lease once.
func (k *keeper) beat(ctx context.Context) {
	leases := k.leases()
	if len(leases) == 0 {
		return
	}
	sentAt := time.Now()
	// A heartbeat that takes longer than the interval is no use: the next
	// one is due.
	hctx, cancel := context.WithTimeout(ctx, k.interval)
	res, err := k.renew(hctx, leases)
	cancel()
	if err != nil {
		// The watchdog timers stop the tasks if this goes on too long.
		k.log.Warn("heartbeat failed", "leases", len(leases), "err", err)
		return
	}
	notRenewed := map[agentledger.Lease]bool{}
	for _, l := range res.Lost {
		notRenewed[l] = true
		k.stop(l, agentledger.ErrLeaseLost)
	}
	for _, l := range res.Busy { // still held; renewed next time
		notRenewed[l] = true
	}
	for _, l := range res.Cancel {
		k.stop(l, agentledger.ErrCancelled)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, l := range leases {
		if e := k.running[l]; e != nil && !notRenewed[l] {
			e.deadline.Set(sentAt.Add(k.lease - k.margin))
			e.timer.Reset(time.Until(sentAt.Add(k.lease - k.margin)))
		}
	}
}

// stop cancels the task holding l with cause. A task whose outcome is
// queued for writing is left to that write, which is fenced: a heartbeat
// that missed the lease because the outcome had just been written (a
// failure that leaves the task to its compensation, say) lost nothing.
func (k *keeper) stop(l agentledger.Lease, cause error) {
	k.mu.Lock()
	e := k.running[l]
	if e != nil && e.completing {
		e = nil
	}
	k.mu.Unlock()
	if e != nil {
		if errors.Is(cause, agentledger.ErrLeaseLost) {
			k.log.Warn("lease lost", "task", l.TaskID, "token", l.Token)
		}
		e.cancel(cause)
	}
}

// stopAll cancels every running task with cause and returns their leases.
// Attempts whose outcome is already queued for writing are left alone:
// releasing one could requeue a task that is succeeding at that moment.
func (k *keeper) stopAll(cause error) []agentledger.Lease {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make([]agentledger.Lease, 0, len(k.running))
	for _, e := range k.running {
		if e.completing {
			continue
		}
		e.cancel(cause)
		out = append(out, e.lease)
	}
	return out
}

// completing marks l's outcome as queued for writing.
func (k *keeper) completing(l agentledger.Lease) {
	k.mu.Lock()
	if e := k.running[l]; e != nil {
		e.completing = true
	}
	k.mu.Unlock()
}
