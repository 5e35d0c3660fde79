package janitor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// lockKey is the advisory lock a run holds: one janitor at a time.
const lockKey = 7_211_660_815_501_451_265 // "agentledger janitor"

// Sweep is one kind of row the janitor deletes.
type Sweep struct {
	// Name labels the sweep in logs and reports ("ledger", "tasks", …).
	Name string
	// Window is how long rows are kept (its meaning is the sweep's).
	Window time.Duration
	// Delete deletes at most batch rows older than window and returns how
	// many went; the janitor calls it until a batch comes back short.
	Delete func(ctx context.Context, window time.Duration, batch int) (int64, error)
}

// Config tunes a Janitor; zero fields take the defaults.
type Config struct {
	// Interval between runs (10 minutes).
	Interval time.Duration
	// Batch is the most rows one statement deletes (1000).
	Batch  int
	Logger *slog.Logger
	// OnDelete, when set, is told how many rows each sweep of a run
	// deleted (for metrics).
	OnDelete func(sweep string, n int64)
}

// Defaults.
const (
	DefaultInterval = 10 * time.Minute
	DefaultBatch    = 1000
)

// Janitor runs sweeps periodically under an advisory lock.
type Janitor struct {
	db     *pgxpool.Pool
	sweeps []Sweep
	cfg    Config
	log    *slog.Logger
}

// New returns a janitor of db running sweeps in order.
func New(db *pgxpool.Pool, sweeps []Sweep, cfg Config) (*Janitor, error) {
	for _, s := range sweeps {
		if s.Name == "" || s.Delete == nil || s.Window <= 0 {
			return nil, fmt.Errorf("janitor: sweep %q needs a name, a delete and a positive window (got %v)", s.Name, s.Window)
		}
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultBatch
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Janitor{db: db, sweeps: sweeps, cfg: cfg, log: log}, nil
}

// Report is what one run did.
type Report struct {
	// Skipped is set when another janitor held the lock.
	Skipped bool
	// Deleted counts rows per sweep.
	Deleted map[string]int64
}

// Run runs the sweeps every Interval (the first run after a short delay,
// so that a restarting fleet does not start them all at once) until ctx
// ends. Errors are logged; the next run tries again.
func (j *Janitor) Run(ctx context.Context) error {
	t := time.NewTimer(j.cfg.Interval / 10)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		rep, err := j.RunOnce(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			j.log.Warn("janitor: run failed", "err", err)
		case rep.Skipped:
			j.log.Debug("janitor: another daemon is running it")
		default:
			j.log.Info("janitor: run done", "deleted", rep.Deleted)
		}
		t.Reset(j.cfg.Interval)
	}
}

// RunOnce runs every sweep once, if no other janitor is running.
func (j *Janitor) RunOnce(ctx context.Context) (Report, error) {
	conn, err := j.db.Acquire(ctx)
	if err != nil {
		return Report{}, fmt.Errorf("janitor: %w", err)
	}
	defer conn.Release()
	var got bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, int64(lockKey)).Scan(&got); err != nil {
		return Report{}, fmt.Errorf("janitor: %w", err)
	}
	if !got {
		return Report{Skipped: true}, nil
	}
	defer func() {
		// A failed unlock leaves the lock to the session: close it so the
		// next run is not refused forever.
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, err := conn.Exec(uctx, `SELECT pg_advisory_unlock($1)`, int64(lockKey)); err != nil {
			_ = conn.Conn().Close(uctx)
		}
	}()
	rep := Report{Deleted: map[string]int64{}}
	var errs []error
	for _, s := range j.sweeps {
		n, err := j.sweep(ctx, s)
		rep.Deleted[s.Name] = n
		if j.cfg.OnDelete != nil && n > 0 {
			j.cfg.OnDelete(s.Name, n)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("janitor: %s: %w", s.Name, err))
		}
	}
	return rep, errors.Join(errs...)
}

// sweep deletes batches until one comes back short.
func (j *Janitor) sweep(ctx context.Context, s Sweep) (int64, error) {
	var total int64
	for {
		n, err := s.Delete(ctx, s.Window, j.cfg.Batch)
		total += n
		if err != nil || n < int64(j.cfg.Batch) {
			return total, err
		}
	}
}
