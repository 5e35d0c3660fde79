package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
)

// errShutdown is the cause given to tasks still running when the grace
// period ends.
var errShutdown = errors.New("worker shutting down: lease released")

// Pool runs tasks from PostgreSQL. Create it with New and call Run.
type Pool struct {
	cfg    Config
	db     *pgxpool.Pool
	store  *claims.Store
	keeper *keeper
	done   *completer
	log    *slog.Logger

	wake  map[string]chan struct{} // per queue: a claim is worth trying now
	slots map[string]*queueSlots   // per queue: the claim loop's slots, which Reserve shares
	due   map[string]*dueAt        // per queue: the next waiting task's deadline known here
	tasks sync.WaitGroup           // running task goroutines

	hurry     chan struct{} // closed by EndGrace
	hurryOnce sync.Once

	kindNames []string // sorted; what this pool claims
	// reannounce asks announce to register the pool now (Reannounce).
	reannounce chan struct{}

	// caps are what its claims pass as ClaimParams.Caps: Config.Caps as
	// last announced (nil without Config.Caps). A change between two
	// announcements shows in the check before a task runs (lacks).
	caps atomic.Pointer[[]string]

	bg   context.Context // the keeper's and completer's: lives through the grace period
	work context.Context // the tasks': ends when the grace period does
	// stopping is set when Run's ctx ends: no slot is reserved, and a
	// reserved slot's task is released rather than run (slot.Start).
	stopping atomic.Bool
}

// New returns a Pool working through db.
func New(db *pgxpool.Pool, cfg Config) (*Pool, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	p := &Pool{cfg: cfg, db: db, store: claims.New(db), log: cfg.Logger.With("worker", cfg.ID),
		wake: map[string]chan struct{}{}, slots: map[string]*queueSlots{}, due: map[string]*dueAt{}, hurry: make(chan struct{}), reannounce: make(chan struct{}, 1)}
	p.keeper = newKeeper(cfg.Lease, cfg.HeartbeatInterval, func(ctx context.Context, ls []agentledger.Lease) (claims.HeartbeatResult, error) {
		return p.store.Heartbeat(ctx, ls, cfg.Lease)
	}, p.log)
	p.done = newCompleter(p.store, p.cfg.CompletionWait, p.log)
	for _, q := range cfg.Queues {
		p.wake[q] = make(chan struct{}, 1)
		p.due[q] = newDueAt()
		p.slots[q] = newQueueSlots(cfg.Concurrency)
	}
	for k := range cfg.Handlers {
		p.kindNames = append(p.kindNames, k)
	}
	sort.Strings(p.kindNames)
	return p, nil
}

// EndGrace ends a running shutdown's grace period at once (a second
// SIGINT): running tasks are cancelled and their leases released.
func (p *Pool) EndGrace() { p.hurryOnce.Do(func() { close(p.hurry) }) }

// ID returns the worker's identity as recorded in leases.
func (p *Pool) ID() string { return p.cfg.ID }

// Run works tasks until ctx is done, then shuts down gracefully: no new
// claims, running tasks get the grace period, the rest are cancelled and
// their leases released. It returns nil after a clean shutdown.
func (p *Pool) Run(ctx context.Context) error {
	p.log.Info("worker started", "queues", p.cfg.Queues, "kinds", p.kindNames, "concurrency", p.cfg.Concurrency,
		"lease", p.cfg.Lease, "poll_only", p.cfg.PollOnly)

	// Background machinery outlives ctx: it must keep leases alive and
	// record outcomes through the grace period.
	bg, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	p.bg = bg
	var bgWG sync.WaitGroup
	bgWG.Add(2)
	go func() { defer bgWG.Done(); p.keeper.run(bg) }()
	go func() { defer bgWG.Done(); p.done.run(bg) }()

	// Task contexts are cancelled only at the end of the grace period (or
	// by the keeper), not when ctx is.
	work, stopWork := context.WithCancelCause(bg)
	p.work = work

	var prodWG sync.WaitGroup
	if !p.cfg.PollOnly {
		prodWG.Add(1)
		go func() { defer prodWG.Done(); p.listen(ctx) }()
	}
	for _, q := range p.cfg.Queues {
		prodWG.Add(1)
		go func() { defer prodWG.Done(); p.produce(ctx, work, q) }()
	}
	prodWG.Add(2)
	go func() { defer prodWG.Done(); p.watchStrays(ctx) }()
	go func() { defer prodWG.Done(); p.announce(ctx) }()
	<-ctx.Done()
	p.stopping.Store(true)
	p.log.Info("stopping: no new claims")
	prodWG.Wait()

	p.shutdown(stopWork)
	stopBG()
	bgWG.Wait()
	p.retire()
	p.log.Info("worker stopped")
	return nil
}

func (p *Pool) shutdown(stopWork context.CancelCauseFunc) {
	n := p.keeper.count()
	if n > 0 {
		p.log.Info("waiting for running tasks", "running", n, "grace", p.cfg.Grace)
	}
	finished := make(chan struct{})
	go func() { p.tasks.Wait(); close(finished) }()
	select {
	case <-finished:
		return
	case <-time.After(p.cfg.Grace):
	case <-p.hurry:
		p.log.Info("grace period cut short")
	}
	leases := p.keeper.stopAll(errShutdown)
	stopWork(errShutdown)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lost, err := p.store.ReleaseMany(ctx, leases)
	if err != nil {
		p.log.Error("releasing leases at shutdown failed; they expire on their own", "leases", len(leases), "err", err)
	} else {
		p.log.Info("released leases", "released", len(leases)-len(lost), "already_lost", len(lost))
	}
	select {
	case <-finished:
	case <-time.After(5 * time.Second):
		p.log.Warn("some handlers ignored cancellation and are still running; their writes are fenced out")
	}
}

// produce claims and starts tasks of queue q until ctx is done.
func (p *Pool) produce(ctx, work context.Context, q string) {
	slots := p.slots[q]
	sem, slotFreed := slots.sem, slots.freed
	defer slots.setIdle(false) // no slot is reserved once the loop has stopped
	poll := time.NewTicker(p.cfg.PollInterval)
	defer poll.Stop()
	// Claims take over expired leases at start and after each poll tick;
	// in between (woken by new tasks, or by freed slots) they claim due
	// tasks only, the cheaper statement.
	sweep := true
	due := p.due[q]
	dueTimer := time.NewTimer(time.Hour)
	dueTimer.Stop()
	defer dueTimer.Stop()
	wakeDue := false // a waiting task's deadline came: wake it before claiming
	var lastClaim time.Time
	hint := claims.SpreadHint() // whether the queue's due tasks are one tenant's; where its rotation stands
	capped := false             // some tenant's running tasks are capped (read at each sweep)
	written := p.done.onWrite() // outcomes written: room under a cap
	for {
		select {
		case <-poll.C: // a backlog of full batches never reaches the wait below
			sweep = true
		default:
		}
		if sweep {
			hint.Rewind() // tasks before the alone claims' mark: passed over, or of a higher priority
		}
		free := cap(sem) - len(sem)
		if free > p.cfg.BatchSize {
			free = p.cfg.BatchSize
		}
		got, claimed := 0, false
		if sweep || wakeDue {
			// Waiting tasks whose deadline came are queued again first,
			// for this claim to take (claims.WakeDue); the next deadline
			// sets the timer that comes back for it.
			wakeDue = false
			_, next, err := p.store.WakeDueNext(ctx, q)
			if err != nil && ctx.Err() == nil {
				p.log.Warn("waking waiting tasks failed", "queue", q, "err", err)
			}
			due.set(next)
			armDue(dueTimer, due.get())
		}
		// A sweep claims in full only when a lease has expired: the full
		// statement is the larger to plan and run, and a poll with none
		// claims as a woken loop does.
		full := sweep
		if sweep && free > 0 {
			sw, err := p.store.Probe(ctx, q)
			if err != nil && ctx.Err() == nil {
				p.log.Warn("probing the queue before its sweep failed; claiming in full", "queue", q, "err", err)
			}
			full = sw.Expired
			capped = sw.Capped || (err != nil && capped)
		}
		if free > 0 {
			tasks, sentAt, err := p.claim(ctx, q, free, !full, hint)
			lastClaim = time.Now()
			if err == nil {
				sweep, claimed = false, true
			}
			if err != nil && ctx.Err() == nil {
				p.log.Warn("claim failed", "queue", q, "err", err)
			}
			for _, t := range tasks {
				sem <- struct{}{}
				p.start(work, t, sentAt, slots.free) // the slot frees when the handler returns
			}
			got = len(tasks)
		}
		next := afterClaim(free, got, p.cfg.BatchSize)
		if next == claimAgain {
			continue // a full batch: there is probably more
		}
		// A claim that left no due task it could take makes the loop idle
		// until it claims again: an enqueue of this process may then lease
		// its task to a free slot itself (Reserve).
		slots.setIdle(next == awaitNews && claimed)
		// With every slot busy only a freed slot is news; otherwise wait
		// for a notification or the poll — unless a tenant has a cap: a
		// short claim may then be a capped tenant's at its cap, whose room
		// comes back when one of its tasks' ends is written, so a written
		// batch claims again (after the cooldown) instead of leaving that
		// tenant's tasks to the poll.
		var freed, wrote <-chan struct{}
		if next == awaitSlots {
			freed = slotFreed
		}
		if capped {
			wrote = written
		}
	wait:
		for {
			select {
			case <-ctx.Done():
				return
			case <-p.wake[q]:
				hint.Rewind() // new tasks may sort before the alone claims' mark
				if !p.coolDown(ctx, lastClaim) {
					return
				}
			case <-poll.C:
				sweep = true
			case <-freed:
				if !p.coolDown(ctx, lastClaim) {
					return
				}
			case <-wrote:
				if !p.coolDown(ctx, lastClaim) {
					return
				}
			case <-dueTimer.C:
				wakeDue = true
			case <-due.sooner:
				armDue(dueTimer, due.get()) // a task parked here with an earlier deadline
				continue wait
			}
			break
		}
		// The claim about to run sees every task whose notification has
		// arrived (a notification follows its commit): those are news no
		// more.
		select {
		case <-p.wake[q]:
		default:
		}
		slots.setIdle(false)
	}
}

// What a claim loop does after a claim.
const (
	claimAgain = iota // at once: the claim filled a batch, there is probably more
	awaitSlots        // when a slot frees, after the cooldown: the claim took every slot free when it began
	awaitNews         // when tasks may be due: a notification, the poll, a deadline
)

// afterClaim decides what the loop does after a claim that asked for free
// tasks and got got, under a batch size of batch. A claim that filled
// every free slot but not a batch (the slots, not the queue, bounded it)
// waits for a freed slot and the cooldown, as one that found no slot free:
// claiming at once took only the few slots that freed during the claim, a
// small claim after each large one. A slot that freed during the claim
// has left its signal in slotFreed (buffered), so the wait ends at once
// and only the cooldown is waited out. Ten daemons of 100 slots each,
// whose concurrency is their batch (agentd's default), claimed 81 tasks
// at a time instead of 61 over one tenant and did 1.05× (0.99–1.18) the
// tasks a second; 77 instead of 57 and 1.12× (0.94–1.29) over 10,000
// tenants (BENCHMARKS.md).
func afterClaim(free, got, batch int) int {
	switch {
	case free > 0 && got == free && got >= batch:
		return claimAgain
	case free == 0 || got == free:
		return awaitSlots
	default:
		return awaitNews
	}
}

// coolDown waits until ClaimCooldown has passed since last; false if ctx
// ended first.
func (p *Pool) coolDown(ctx context.Context, last time.Time) bool {
	d := p.cfg.ClaimCooldown - time.Since(last)
	return d <= 0 || agentledger.Sleep(ctx, d)
}

// claim claims up to n tasks of queue q (due ones only if dueOnly). The lease's local deadline counts
// from when the statement was sent, so the connection is acquired first: a
// wait for one must not eat into the lease. Once sent, the claim is not
// cancelled with ctx — a claim that committed anyway would strand its tasks
// until their leases expired; its tasks are started and, at shutdown,
// released like the others.
func (p *Pool) claim(ctx context.Context, q string, n int, dueOnly bool, hint *claims.ClaimHint) ([]*agentledger.Task, time.Time, error) {
	conn, err := p.db.Acquire(ctx)
	if err != nil {
		return nil, time.Time{}, err
	}
	defer conn.Release()
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.cfg.Lease/2)
	defer cancel()
	sentAt := time.Now()
	tasks, err := claims.New(conn).Claim(cctx, claims.ClaimParams{Queue: q, Worker: p.cfg.ID, Limit: n,
		Lease: p.cfg.Lease, Kinds: p.kindNames, Caps: p.claimCaps(), DueOnly: dueOnly, Hint: hint})
	if len(tasks) > 0 {
		p.cfg.Observer.Claimed(q, len(tasks))
	}
	return tasks, sentAt, err
}

// start runs task t in its own goroutine. freeSlot is called as soon as the
// outcome is queued for writing — the producer may claim more while it is
// written, and the completer's bounded queue holds claiming back when
// writes fall behind; the keeper holds the lease until the write.
func (p *Pool) start(work context.Context, t *agentledger.Task, sentAt time.Time, freeSlot func()) {
	p.tasks.Add(1)
	p.begin(work, t, sentAt, freeSlot)
}

// begin is start for a task p.tasks already counts (a reserved slot's).
func (p *Pool) begin(work context.Context, t *agentledger.Task, sentAt time.Time, freeSlot func()) {
	// An operator's cancel ends the task's context but lets a call in
	// flight finish and be recorded (agentledger.EffectContext); a lost
	// lease or a shutdown ends both.
	ctx, cancel := agentledger.AttemptContext(work)
	lease := claims.LeaseOf(t)
	deadline := new(agentledger.LeaseDeadline)
	ctx = agentledger.WithLeaseDeadline(ctx, deadline)
	p.keeper.add(lease, sentAt, cancel, deadline)
	go func() {
		defer p.tasks.Done()
		var once sync.Once
		free := func() { once.Do(freeSlot) }
		defer free()
		defer cancel(nil)
		defer p.keeper.remove(lease)
		p.runTask(ctx, t, lease, free)
	}()
}

// taskLog is the logger of one attempt, built only when something is
// logged: building it for every task cost a sixth of the worker's CPU.
func (p *Pool) taskLog(t *agentledger.Task) *slog.Logger {
	return p.log.With("task", t.ID, "kind", t.Kind, "attempt", t.Attempt, "token", t.LeaseToken)
}

func (p *Pool) runTask(ctx context.Context, t *agentledger.Task, lease agentledger.Lease, freeSlot func()) {
	if t.CancelRequested != nil { // cancelled while its previous attempt was lost
		p.ackCancel(lease, t)
		return
	}
	if missing := p.lacks(t); len(missing) > 0 {
		p.handBack(lease, t, missing)
		return
	}
	h, ok := p.cfg.Handlers[t.Kind]
	if !ok {
		p.record(ctx, lease, nil, agentledger.Permanent(fmt.Errorf("no handler for kind %q on worker %s (it knows: %s)",
			t.Kind, p.cfg.ID, strings.Join(p.kindNames, ", "))), t, time.Now(), freeSlot)
		return
	}
	started := time.Now()
	ctx, span := traceAttempt(ctx, t, p.cfg.ID)
	result, stack, err := safeWork(ctx, h, t)
	if stack != nil {
		// A bug in the kind or a tool: said loudly, with where it is.
		p.taskLog(t).ErrorContext(ctx, "handler panicked", "err", err, "stack", string(stack))
	}
	endAttempt(span, err)
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, agentledger.ErrLeaseLost), errors.Is(cause, errLeaseExpiring):
		p.cfg.Observer.LeaseLost()
		p.taskLog(t).WarnContext(ctx, "attempt abandoned", "cause", cause)
		return
	case errors.Is(cause, errShutdown):
		return // the lease is released by shutdown
	case errors.Is(cause, agentledger.ErrCancelled):
		p.ackCancel(lease, t)
		return
	case errors.Is(err, agentledger.ErrLeaseLost):
		p.cfg.Observer.LeaseLost()
		p.taskLog(t).WarnContext(ctx, "attempt lost its lease while working", "err", err)
		return
	case errors.Is(err, agentledger.ErrNeedsAttention):
		if p.park(ctx, lease, err, t) {
			p.cfg.Observer.Finished(t.Kind, agentledger.StateNeedsAttention, time.Since(started))
		}
		return
	}
	var waits *agentledger.DeferredError
	if errors.As(err, &waits) {
		p.deferTask(lease, waits, t)
		return
	}
	p.record(ctx, lease, result, err, t, started, freeSlot)
}

// record writes the outcome of an attempt through the completer; queued is
// called once the completer has taken it. ctx only carries the attempt's
// span to the log lines.
func (p *Pool) record(ctx context.Context, lease agentledger.Lease, result []byte, err error, t *agentledger.Task,
	started time.Time, queued func()) {
	cm := &completion{}
	if err == nil {
		cm.success = &claims.Success{Lease: lease, Result: result}
	} else {
		f := claims.Failure{Lease: lease, Error: err.Error(), Delay: p.cfg.Backoff.Delay(t.Attempt)}
		var perm *agentledger.PermanentError
		var after *agentledger.RetryAfterError
		switch {
		case errors.As(err, &perm):
			f.Final = true
		case errors.As(err, &after) && after.After > 0:
			f.Delay = after.After
		}
		cm.failure = &f
	}
	// The outcome is written even if the task's context ends now: the wait
	// ends with the pool's background work (the completer bounds each write).
	p.keeper.completing(lease)
	r := p.done.complete(p.bg, cm, queued)
	switch {
	case r.err != nil:
		p.taskLog(t).ErrorContext(ctx, "recording outcome failed; the lease will expire and the task run again", "err", r.err)
	case r.state == "":
		p.cfg.Observer.LeaseLost()
		p.taskLog(t).WarnContext(ctx, "lease lost before the outcome was recorded")
	default:
		p.cfg.Observer.Finished(t.Kind, r.state, time.Since(started))
		if r.state != agentledger.StateSucceeded {
			p.taskLog(t).InfoContext(ctx, "task failed", "state", r.state, "err", err)
		}
	}
}

func (p *Pool) ackCancel(lease agentledger.Lease, t *agentledger.Task) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The task's row names who asked (the operator, or a tenant through
	// the API); this reason stands only where it names nobody.
	if err := p.store.Cancelled(ctx, lease, "cancelled by operator"); err != nil {
		p.taskLog(t).Warn("acknowledging cancel failed", "err", err)
		return
	}
	p.cfg.Observer.Finished(t.Kind, agentledger.StateCancelled, 0)
	p.taskLog(t).Info("task cancelled")
}

// park hands the task to an operator: an effect's outcome is unknown and may
// not be performed blindly.
func (p *Pool) park(actx context.Context, lease agentledger.Lease, cause error, t *agentledger.Task) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.store.NeedsAttention(ctx, lease, cause.Error()); err != nil {
		p.taskLog(t).WarnContext(actx, "parking the task for an operator failed", "err", err)
		return false
	}
	p.taskLog(t).WarnContext(actx, "task needs attention", "cause", cause)
	return true
}

// deferTask queues the task again at d.Until without counting the attempt:
// it waited for a limit and did nothing outside, so it must neither use up
// its attempts nor hold a worker slot while it waits.
func (p *Pool) deferTask(lease agentledger.Lease, d *agentledger.DeferredError, t *agentledger.Task) {
	p.keeper.completing(lease)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := p.store.Defer(ctx, claims.Deferral{Lease: lease, Until: d.Until, Reason: d.Reason, Park: d.Park, Performed: d.Performed})
	if err == nil {
		// Its queue's loop comes back for it on time: a parked task is
		// woken then, one deferred for a limit's next slot is claimed
		// then, rather than at the next poll.
		if due := p.due[t.Queue]; due != nil {
			due.offer(d.Until)
		}
	}
	switch {
	case errors.Is(err, agentledger.ErrLeaseLost):
		p.cfg.Observer.LeaseLost()
		p.taskLog(t).Warn("lease lost before the deferral was recorded")
		return
	case err != nil:
		p.taskLog(t).Error("recording a deferral failed; the lease will expire and the task run again", "err", err)
		return
	}
	if o, ok := p.cfg.Observer.(DeferObserver); ok {
		o.Deferred(t.Kind, d.TargetKind())
	}
	p.taskLog(t).Debug("task deferred", "until", d.Until, "reason", d.Reason)
}

// safeWork runs the handler, turning a panic into a retryable error; stack
// is the panicking goroutine's stack, nil when it did not panic.
func safeWork(ctx context.Context, h Handler, t *agentledger.Task) (result []byte, stack []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			stack = debug.Stack()
			err = fmt.Errorf("handler panicked: %v (its stack is in the worker's log)", r)
		}
	}()
	result, err = h.Work(ctx, t)
	return result, nil, err
}
