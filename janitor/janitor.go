package janitor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentledger/agentledger"
)

// DB is what the janitor needs of a database: a pool, a connection or a
// transaction (pgx's own types satisfy it).
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Begin(ctx context.Context) (pgx.Tx, error)
}

// leaderName is the janitor's row in the leaders table.
const leaderName = "janitor"

// acquireSQL takes or renews the janitor's lease for $2 if it is free,
// expired or already ours ($1); it returns a row only then.
const acquireSQL = `/* janitor.acquire */
INSERT INTO leaders (name, owner, expires_at) VALUES ('` + leaderName + `', $1, now() + $2::interval)
ON CONFLICT (name) DO UPDATE SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at
WHERE leaders.expires_at < now() OR leaders.owner = EXCLUDED.owner
RETURNING owner`

const releaseSQL = `/* janitor.release */ DELETE FROM leaders WHERE name = '` + leaderName + `' AND owner = $1`

// Sweep is one kind of row the janitor deletes.
type Sweep struct {
	// Name labels the sweep in logs and reports ("ledger", "tasks", …).
	Name string
	// Window is how long rows are kept (its meaning is the sweep's).
	Window time.Duration
	// Delete deletes at most batch rows older than window and returns how
	// many went; the janitor calls it until a batch comes back short, with
	// a window grown by the time the sweep has taken, so that its cutoff
	// does not move.
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
	// Pace is the share of a sweep's time spent deleting (0.5): after each
	// full batch the sweep waits (1-Pace)/Pace times as long as the batch
	// took, so that a backlog of expired rows (a day's retention coming
	// due at once) does not hold the server's write path back to back for
	// the whole sweep; 1 deletes without pausing.
	Pace float64
}

// Defaults.
const (
	DefaultInterval = 10 * time.Minute
	DefaultBatch    = 1000
	DefaultPace     = 0.5
)

// Janitor runs sweeps periodically while it holds the janitor's lease.
type Janitor struct {
	db     DB
	sweeps []Sweep
	cfg    Config
	log    *slog.Logger
	owner  string // this janitor's name in the leaders table

	now   func() time.Time                                // time.Now but in tests
	pause func(ctx context.Context, d time.Duration) bool // false when ctx ended first
}

// leaseFor is how long a run holds the lease without renewing it; it is
// renewed before every sweep.
const leaseFor = 5 * time.Minute

// New returns a janitor of db running sweeps in order.
func New(db DB, sweeps []Sweep, cfg Config) (*Janitor, error) {
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
	switch {
	case cfg.Pace == 0:
		cfg.Pace = DefaultPace
	case !(cfg.Pace > 0 && cfg.Pace <= 1):
		return nil, fmt.Errorf("janitor: Pace is the share of a sweep's time spent deleting, more than 0 and at most 1; got %v", cfg.Pace)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return &Janitor{db: db, sweeps: sweeps, cfg: cfg, log: log, owner: hex.EncodeToString(b), now: time.Now, pause: agentledger.Sleep}, nil
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
	got, err := j.acquire(ctx)
	if err != nil || !got {
		return Report{Skipped: err == nil}, err
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, err := j.db.Exec(rctx, releaseSQL, j.owner); err != nil {
			j.log.Warn("janitor: releasing the lease failed; it expires by itself", "err", err)
		}
	}()
	rep := Report{Deleted: map[string]int64{}}
	var errs []error
	for i, s := range j.sweeps {
		if i > 0 { // renew, so a long run keeps the lease
			got, err := j.acquire(ctx)
			if err != nil {
				// Wrapped, so that the log's outage tracker knows a database away.
				errs = append(errs, fmt.Errorf("janitor: renewing its lease before sweep %s: %w", s.Name, err))
				break
			}
			if !got {
				errs = append(errs, fmt.Errorf("janitor: lease lost before sweep %s", s.Name))
				break
			}
		}
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

// acquire takes or renews the janitor's lease.
func (j *Janitor) acquire(ctx context.Context) (bool, error) {
	var owner string
	err := j.db.QueryRow(ctx, acquireSQL, j.owner, leaseFor).Scan(&owner)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("janitor: %w", err)
	}
	return true, nil
}

// sweep deletes batches until one comes back short, pausing between them
// as Config.Pace says. The cutoff stays
// where it was when the sweep began (the window grows by the time spent):
// rows that come of age meanwhile wait for the next run. Without that, a
// sweep at a pace no faster than new rows came of age — the ledger's at
// 1,000 tasks/s — never came back short, and the sweeps after it (the
// tasks') never ran.
func (j *Janitor) sweep(ctx context.Context, s Sweep) (int64, error) {
	var total int64
	began := j.now()
	for {
		start := j.now()
		n, err := s.Delete(ctx, s.Window+start.Sub(began), j.cfg.Batch)
		total += n
		if err != nil || n < int64(j.cfg.Batch) {
			return total, err
		}
		if j.cfg.Pace < 1 {
			took := j.now().Sub(start)
			if !j.pause(ctx, time.Duration(float64(took)*(1-j.cfg.Pace)/j.cfg.Pace).Round(time.Microsecond)) {
				return total, ctx.Err()
			}
		}
	}
}
