package schedule

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/admit"
	"github.com/agentledger/agentledger/claims"
)

// Config tunes a Scheduler; zero fields take the defaults.
type Config struct {
	// Tolerance is how late the latest due slot may be and still fire as
	// on time (1 minute); a later one is missed.
	Tolerance time.Duration
	// PollInterval is the longest the scheduler sleeps, so that it sees
	// new, resumed and changed schedules (1s).
	PollInterval time.Duration
	// Now pins the clock for tests; nil means the database's now().
	Now func() time.Time
	// OnFire, if set, is called for every task the scheduler created, once
	// its transaction committed: catchUp for a missed slot's task. A slot
	// another daemon had fired is not reported. It runs on the scheduler's
	// goroutine: keep it quick.
	OnFire func(name string, slot time.Time, catchUp bool)
	Logger *slog.Logger
	// Door admits each slot's task, its caller the schedule (package
	// admit); nil means the zero door (no grants, published schemas).
	Door *admit.Door
}

// Defaults.
const (
	DefaultTolerance    = time.Minute
	DefaultPollInterval = time.Second
)

// dueBatch is how many due schedules one look-up returns.
const dueBatch = 100

// Stats counts what a scheduler did since it was made.
type Stats struct {
	// Fires is the tasks it enqueued for slots on time.
	Fires int64
	// CatchUps is the tasks it enqueued for missed slots (policy run-once).
	CatchUps int64
	// Skipped is the missed slots it fired no task for (a lower bound
	// after more than 10,000 slots of downtime).
	Skipped int64
	// Duplicates is the slots whose task existed already: another daemon
	// fired them.
	Duplicates int64
}

// Scheduler fires the due schedules of a database. Any number of
// schedulers, in any number of daemons, may run on one database: each
// slot becomes one task.
type Scheduler struct {
	store *Store
	cfg   Config
	log   *slog.Logger

	fires, catchUps, skipped, duplicates atomic.Int64
}

// NewScheduler returns a scheduler of db's schedules.
func NewScheduler(db claims.DB, cfg Config) (*Scheduler, error) {
	switch {
	case cfg.Tolerance < 0:
		return nil, agentledger.Invalid("tolerance", "%s is negative", cfg.Tolerance)
	case cfg.Tolerance == 0:
		cfg.Tolerance = DefaultTolerance
	}
	switch {
	case cfg.PollInterval < 0:
		return nil, agentledger.Invalid("poll_interval", "%s is negative", cfg.PollInterval)
	case cfg.PollInterval == 0:
		cfg.PollInterval = DefaultPollInterval
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Door == nil {
		cfg.Door = &admit.Door{}
	}
	st := NewStore(db)
	st.Now = cfg.Now
	return &Scheduler{store: st, cfg: cfg, log: log}, nil
}

// Stats returns the scheduler's counters.
func (s *Scheduler) Stats() Stats {
	return Stats{Fires: s.fires.Load(), CatchUps: s.catchUps.Load(), Skipped: s.skipped.Load(),
		Duplicates: s.duplicates.Load()}
}

// Run fires due schedules until ctx ends, then returns nil. Between
// rounds it sleeps until the earliest next fire, or PollInterval at most.
// Errors are logged and retried after PollInterval.
func (s *Scheduler) Run(ctx context.Context) error {
	for {
		_, err := s.RunOnce(ctx)
		if ctx.Err() != nil {
			return nil
		}
		wait := s.cfg.PollInterval
		if err != nil {
			s.log.Warn("schedule: firing schedules failed", "err", err)
		} else if next, now, err := s.nextFire(ctx); err != nil {
			if ctx.Err() == nil {
				s.log.Warn("schedule: reading the next fire failed", "err", err)
			}
		} else if next != nil {
			switch d := next.Sub(now); {
			case d <= 0: // due, but another daemon holds it, or it just came due
				wait = min(wait, 50*time.Millisecond)
			case d < wait:
				wait = d
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// RunOnce fires every schedule due now, each in its own transaction, and
// returns how many it fired. A schedule another daemon is firing is left
// to it. An error of one schedule does not stop the others; the first is
// returned.
func (s *Scheduler) RunOnce(ctx context.Context) (int, error) {
	fired := 0
	var first error
	for {
		rows, err := s.store.db.Query(ctx, dueSQL, s.store.Now.Param(), dueBatch)
		if err != nil {
			return fired, dbError("", err)
		}
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return fired, dbError("", err)
		}
		batch := 0
		for _, name := range names {
			ok, err := s.fire(ctx, name)
			if ok {
				batch++
			}
			if err != nil {
				if ctx.Err() != nil {
					return fired, ctx.Err()
				}
				s.log.Error("schedule: firing failed; retried at the next round", "schedule", name, "err", err)
				if first == nil {
					first = err
				}
			}
		}
		fired += batch
		// A full batch may hide more due schedules; one fired nothing
		// when other daemons hold them all.
		if len(names) < dueBatch || batch == 0 || first != nil {
			return fired, first
		}
	}
}

// nextFire returns the earliest next fire (nil: none) and the clock.
func (s *Scheduler) nextFire(ctx context.Context) (*time.Time, time.Time, error) {
	var next *time.Time
	var now time.Time
	err := s.store.db.QueryRow(ctx, nextFireSQL, s.store.Now.Param()).Scan(&next, &now)
	return next, now, err
}

// firing is one task a fire enqueues.
type firing struct {
	slot    time.Time
	catchUp bool
	task    int64
	dup     bool
}

// fireTimeout bounds one fire's transaction once begun.
const fireTimeout = 10 * time.Second

// fire fires schedule name if it is still due and no other daemon holds
// it: in one transaction it locks the row, enqueues the slots' tasks and
// moves next_fire_at past now. It reports whether it fired.
//
// A fire begun is finished even if ctx ends meanwhile (within
// fireTimeout): cut off in its commit, it could have created its tasks
// without knowing it, so that they went unreported (OnFire, Stats).
func (s *Scheduler) fire(ctx context.Context, name string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fireTimeout)
	defer cancel()
	tx, err := s.store.db.Begin(ctx)
	if err != nil {
		return false, dbError(name, err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // after Commit it is a no-op
	rows, err := tx.Query(ctx, lockDueSQL, name, s.store.Now.Param())
	if err != nil {
		return false, dbError(name, err)
	}
	var now time.Time
	sc, err := pgx.CollectExactlyOneRow(rows, func(row pgx.CollectableRow) (Schedule, error) {
		var sc Schedule
		err := row.Scan(append(sc.fields(), &now)...)
		return sc, err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil // fired, paused or removed meanwhile, or held by another daemon
	}
	if err != nil {
		return false, dbError(name, err)
	}
	c, err := sc.compile()
	if err != nil {
		return false, fmt.Errorf("schedule %q: %w", name, err)
	}
	d := c.walk(*sc.NextFireAt, now)
	plan, skipped := s.plan(sc, d, now)

	enq := claims.New(tx)
	enq.Now = s.cfg.Now
	var last *time.Time
	for i := range plan {
		f := &plan[i]
		p, err := s.cfg.Door.Admit(ctx, tx, admit.Submission{Caller: admit.Schedule, Params: sc.params(Key(sc.Name, f.slot))})
		var res claims.EnqueueResult
		if err == nil {
			res, err = enq.Enqueue(ctx, p)
		}
		switch {
		case errors.Is(err, agentledger.ErrKeyReuse), errors.Is(err, agentledger.ErrInvalid):
			// Retrying cannot help: a task of another request holds the
			// slot's key, or the door refuses the schedule's task.
			s.log.Error("schedule: slot not fired", "schedule", name, "slot", f.slot.UTC(), "err", err)
			f.task = -1
			continue
		case err != nil:
			return false, fmt.Errorf("schedule %q: slot %s: %w", name, f.slot.UTC().Format(time.RFC3339), err)
		}
		f.task, f.dup = res.Task.ID, res.Duplicate
		last = &f.slot
	}
	if _, err := tx.Exec(ctx, firedSQL, name, slotPtr(d.Next), last, now); err != nil {
		return false, dbError(name, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return false, dbError(name, err)
	}
	s.report(sc, plan, skipped, d)
	return true, nil
}

// plan decides which due slots get a task: the latest if it is at most
// Tolerance late; with policy run-once, the most recent missed slot too.
// It returns them oldest first, and how many missed slots get none.
func (s *Scheduler) plan(sc Schedule, d due, now time.Time) ([]firing, int64) {
	var plan []firing
	missed, recent := d.Count, d.Latest
	if now.Sub(d.Latest) <= s.cfg.Tolerance {
		plan = append(plan, firing{slot: d.Latest})
		missed, recent = d.Count-1, d.Prev
	}
	if missed > 0 && sc.Missed == MissedRunOnce {
		plan = append([]firing{{slot: recent, catchUp: true}}, plan...)
		missed--
	}
	return plan, missed
}

// report logs and counts a committed fire.
func (s *Scheduler) report(sc Schedule, plan []firing, skipped int64, d due) {
	log := s.log.With("schedule", sc.Name)
	if skipped > 0 {
		s.skipped.Add(skipped)
		log.Warn("schedule: missed slots skipped", "slots", skipped, "missed", sc.Missed,
			"latest_due", d.Latest.UTC())
	}
	for _, f := range plan {
		if f.task < 0 {
			continue
		}
		log.Info("schedule: fired", "slot", f.slot.UTC(), "task", f.task, "duplicate", f.dup, "catch_up", f.catchUp)
		switch {
		case f.dup:
			s.duplicates.Add(1)
			continue
		case f.catchUp:
			s.catchUps.Add(1)
		default:
			s.fires.Add(1)
		}
		if s.cfg.OnFire != nil {
			s.cfg.OnFire(sc.Name, f.slot, f.catchUp)
		}
	}
	if d.Next.IsZero() {
		log.Warn("schedule: its spec has no slot in the next five years; it fires no more", "spec", sc.Spec)
	}
}
