package claims

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger"
)

// Starter is a worker pool of this process that may take a task the
// moment it is queued, without a claim (worker.Pool): when it has a slot
// free and found nothing due at its last claim, the enqueue itself leases
// the task to it (Store.EnqueueStart). Temporal's eager start does the
// same for a workflow's first task.
type Starter interface {
	// Reserve holds a slot for a task of queue and kind needing needs,
	// or says false: the pool does not claim such tasks, has no slot
	// free, or is not idle (its last claim left due tasks, or it is
	// stopping). A held slot must be given Start or Release.
	Reserve(queue, kind string, needs []string) (Slot, bool)
	// Queued is told that a task due now was queued in queue instead
	// (no slot, or one it may not take): the pool is no longer idle, and
	// a task enqueued next must not start ahead of it.
	Queued(queue string)
}

// Slot is a reserved place in a Starter's pool.
type Slot interface {
	// Lease is who the task is leased to, and for how long.
	Lease() (worker string, d time.Duration)
	// Takes is what the pool's claims take: its kinds (empty: any) and
	// its capabilities (nil: any), as ClaimParams.Kinds and Caps. A due
	// task of the queue it would take is ahead of the one enqueued.
	Takes() (kinds, caps []string)
	// Start runs t, leased to the slot's worker by a statement sent at
	// sentAt (the lease's local deadline counts from then).
	Start(t *agentledger.Task, sentAt time.Time)
	// Release gives the slot back unused.
	Release()
}

// EnqueueStart is Enqueue, and leases the task to st's pool at once when
// st has a slot for it and it may run now: due now, in a queue where no
// task that pool would take is due and no lease has expired, of a tenant
// without a cap (enqueueStartSQL). The task is then inserted running, as a claim would
// have leased it, and wakes no worker. Otherwise it is queued as Enqueue
// queues it, the slot given back, and st told (Queued). A nil st, a Store
// over a transaction (whose task exists only if it commits, after this
// returns) and a keyed duplicate start nothing.
//
// Like a claim's, the starting insert is not cancelled with ctx once sent
// (it runs for at most half the lease): an insert that committed after
// its caller gave up would leave a leased task no one runs until its lease
// expires, and the claim that takes it then counts the lost attempt. A
// connection lost after the commit still does, as it does to a claim.
func (s *Store) EnqueueStart(ctx context.Context, p EnqueueParams, st Starter) (EnqueueResult, error) {
	if _, inTx := s.db.(pgx.Tx); st == nil || inTx || p.RunAt.After(time.Now()) {
		return s.Enqueue(ctx, p)
	}
	if err := p.Validate(); err != nil {
		return EnqueueResult{}, err
	}
	slot, ok := st.Reserve(p.Queue, p.Kind, p.Needs)
	if !ok {
		res, err := s.Enqueue(ctx, p)
		if err == nil && !res.Duplicate {
			st.Queued(p.Queue)
		}
		return res, err
	}
	started := false
	defer func() {
		if !started { // also when the insert panics: the slot is the pool's
			slot.Release()
		}
	}()
	worker, lease := slot.Lease()
	kinds, caps := slot.Takes()
	ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lease/2)
	defer cancel()
	// On a connection of its own, to know whether its commit reached the
	// synchronous standby (statementConn).
	on := s
	if pool, ok := s.db.(*pgxpool.Pool); ok {
		conn, err := pool.Acquire(ictx)
		if err != nil {
			return EnqueueResult{}, fmt.Errorf("enqueue: %w", err)
		}
		defer conn.Release()
		on = &Store{db: conn, Now: s.Now}
	}
	unreplicated := watchCommit(on.db)
	sentAt := time.Now()
	res, err := on.enqueue(ictx, []EnqueueParams{p}, &startLease{worker: worker, lease: lease, kinds: kinds, caps: caps})
	switch {
	case err != nil:
		return EnqueueResult{}, err
	case unreplicated():
		// Acknowledged, as PostgreSQL acknowledges such a commit, but not
		// started: the task waits out its lease, and the claim that takes
		// it then reaches the standby first (UnreplicatedError).
		return res[0], nil
	case res[0].Duplicate:
		return res[0], nil
	case res[0].Task.State != agentledger.StateRunning:
		st.Queued(p.Queue)
		return res[0], nil
	}
	started = true
	slot.Start(res[0].Task, sentAt)
	return res[0], nil
}

// startLease is the lease an enqueue gives the task it starts.
type startLease struct {
	worker      string
	lease       time.Duration
	kinds, caps []string // what the pool takes (Slot.Takes)
}
