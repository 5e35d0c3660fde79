package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger/internal/pgplan"
)

// FleetFlags configure the fleet command.
type FleetFlags struct {
	CommonFlags
	Tasks        int
	Tenants      int // the tasks spread over this many tenants
	InsertBatch  int
	Daemons      int
	Concurrency  int // in total, split over the daemons
	Batch        int
	MaxConns     int // per daemon
	PollInterval time.Duration
	Rounds       int
	Agentd       string
	PgBouncer    string
	Prepared     bool // also the PgBouncer cases with prepared statements kept
	PoolSize     int
	Procs        int // GOMAXPROCS of each daemon of the extra fleet cases; 0: no such cases
	FleetConns   int // connection pool size of each daemon of an extra direct fleet case; 0: no such case
}

// FleetCase is one configuration: daemons agentd processes, directly or
// through PgBouncer.
type FleetCase struct {
	Daemons   int
	PgBouncer bool
	Prepared  bool // through PgBouncer, which keeps prepared statements: agentd --pgbouncer-prepared
	MaxConns  int  // each daemon's pool size; 0: --max-conns
	Procs     int  // each daemon's GOMAXPROCS; 0: the environment's (unset: Go's default, every CPU)
}

func (c FleetCase) label() string {
	l := fmt.Sprintf("%d direct", c.Daemons)
	if c.PgBouncer {
		l = fmt.Sprintf("%d via pgbouncer", c.Daemons)
	}
	if c.Prepared {
		l += ", prepared"
	}
	if c.MaxConns > 0 {
		l += fmt.Sprintf(", max-conns %d", c.MaxConns)
	}
	if c.Procs > 0 {
		l += fmt.Sprintf(", GOMAXPROCS=%d", c.Procs)
	}
	return l
}

// FleetResult is the outcome of one case in one round.
type FleetResult struct {
	Case    FleetCase
	Round   int
	Elapsed time.Duration // release → last completion, on the server's clock
	Rate    float64
	// Steady is the rate between the completions of the 10th and the 90th
	// percentile of the tasks: the burn-down without its start (daemons'
	// first claims on cold connections) and its tail (the last batches).
	Steady float64
	// Start and Tail are the times from the release to the 10th
	// percentile's completion and from the 90th's to the last: where the
	// whole run loses what the steady rate does not.
	Start, Tail time.Duration
	Wall        time.Duration // release → burn-down seen: the CPU figures' interval
	DaemonCPU   time.Duration
	ServerCPU   time.Duration // the server's processes but the benchmark's own backends and other databases'
	CPUKnown    bool
	Activity    ActivityReport
	Deadlocks   int64 // pg_stat_database of the run's database
	Rollbacks   int64
	Conflicts   int // the daemons' log lines naming a serialization failure, deadlock or lock timeout
	Attempts    int64
	Claims      int64 // claim statements that claimed something (their tasks share the daemon and started_at)
	Completes   int64 // succeed statements (their tasks share the daemon and ended_at)
	Succeeded   int64 // tasks succeeded
	Duplicate   int64 // tasks with more than one attempt
	TimedOut    bool
	OnceFailed  string // why not every task succeeded exactly once; "" if each did
}

func runFleet(ctx context.Context, args []string, out, errOut io.Writer) error {
	f := FleetFlags{}
	fs := newFlagSet("fleet",
		"Pre-inserts no-op tasks and burns them down with real agentd processes on one database: 1 daemon, "+
			"--daemons N daemons directly and N daemons through PgBouncer in transaction mode, at the same total "+
			"concurrency; in interleaved rounds. Reports tasks/s, CPU per task, the daemons' backends' wait events, "+
			"connections per daemon, deadlocks and conflicts, and checks every task succeeded exactly once.", errOut)
	f.register(fs)
	fs.IntVar(&f.Tasks, "tasks", 50000, "tasks inserted before each run")
	fs.IntVar(&f.Tenants, "tenants", 1, "tenants the tasks are spread over, round-robin (t0000, t0001, …)")
	fs.IntVar(&f.InsertBatch, "insert-batch", 1000, "tasks per EnqueueBatch call when inserting (one tenant; over several they are inserted in one statement)")
	fs.IntVar(&f.Daemons, "daemons", 10, "agentd processes of the fleet cases")
	fs.IntVar(&f.Concurrency, "concurrency", 1000, "total concurrency of every case, split evenly over its daemons (agentd --concurrency)")
	fs.IntVar(&f.Batch, "batch", 100, "claim batch size of each daemon (agentd --batch-size)")
	fs.IntVar(&f.MaxConns, "max-conns", 8, "connection pool size of each daemon (agentd --max-conns)")
	fs.DurationVar(&f.PollInterval, "poll-interval", time.Second, "each daemon's --poll-interval")
	fs.IntVar(&f.Rounds, "rounds", 5, "rounds; each runs every case once, in turn, the order rotated each round")
	fs.StringVar(&f.Agentd, "agentd", "", "agentd binary to run; empty: built from this repository's source")
	fs.StringVar(&f.PgBouncer, "pgbouncer", "", "PgBouncer binary; empty: pgbouncer on PATH or in /usr/sbin, /usr/local/sbin, /sbin; "+
		"off: no PgBouncer case")
	fs.BoolVar(&f.Prepared, "pgbouncer-prepared", false, "also run the PgBouncer cases with PgBouncer keeping prepared statements "+
		"(max_prepared_statements = 200: PgBouncer 1.21 or later) and the daemons preparing them (agentd --pgbouncer-prepared)")
	fs.IntVar(&f.FleetConns, "fleet-max-conns", 0, "also run the direct fleet case with this connection pool size in each daemon "+
		"(agentd --max-conns), beside --max-conns's; 0: no such case")
	fs.IntVar(&f.PoolSize, "pool-size", 20, "PgBouncer's default_pool_size: server connections for all the daemons together")
	fs.IntVar(&f.Procs, "fleet-gomaxprocs", 0, "also run the fleet cases with GOMAXPROCS=N in each of their daemons "+
		"(daemons sharing a machine dividing its CPUs, as a container's CPU limit would); 0: no such cases")
	if err := parseFlags(fs, args, &f.CommonFlags); err != nil {
		return err
	}
	if f.Tasks <= 0 || f.InsertBatch <= 0 || f.Daemons <= 0 || f.Concurrency <= 0 || f.Batch <= 0 ||
		f.MaxConns <= 0 || f.PollInterval <= 0 || f.Rounds <= 0 || f.PoolSize <= 0 {
		return errors.New("--tasks, --insert-batch, --daemons, --concurrency, --batch, --max-conns, --poll-interval, " +
			"--rounds and --pool-size must be positive")
	}
	if f.Tenants <= 0 || f.Tenants > f.Tasks {
		return fmt.Errorf("--tenants %d: want 1 to --tasks (%d)", f.Tenants, f.Tasks)
	}
	if f.FleetConns < 0 {
		return fmt.Errorf("--fleet-max-conns %d: want a pool size, or 0 for no such case", f.FleetConns)
	}
	if f.Procs < 0 {
		return fmt.Errorf("--fleet-gomaxprocs %d: want 0 (no such cases) or more", f.Procs)
	}
	if f.Daemons < 2 {
		return errors.New("--daemons must be at least 2: the fleet is compared with one daemon")
	}
	if f.Concurrency%f.Daemons != 0 {
		return fmt.Errorf("--concurrency %d does not split evenly over --daemons %d", f.Concurrency, f.Daemons)
	}
	if _, err := f.logger(errOut); err != nil {
		return err
	}
	bouncerBin, err := findPgBouncer(f.PgBouncer)
	if err != nil {
		return err
	}

	dir, err := os.MkdirTemp("", "agentbench-fleet-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin, err := agentdBinary(ctx, f.Agentd, dir)
	if err != nil {
		return err
	}
	srv, err := openServer(ctx, f.CommonFlags)
	if err != nil {
		return err
	}
	defer srv.Close()

	cases := []FleetCase{{Daemons: 1}, {Daemons: f.Daemons}}
	if f.FleetConns > 0 {
		cases = append(cases, FleetCase{Daemons: f.Daemons, MaxConns: f.FleetConns})
	}
	if f.Procs > 0 {
		cases = append(cases, FleetCase{Daemons: f.Daemons, Procs: f.Procs})
	}
	var bouncer *PgBouncer
	bouncerNote := ""
	switch {
	case f.PgBouncer == "off":
		bouncerNote = "PgBouncer case skipped: --pgbouncer off"
	case bouncerBin == "":
		bouncerNote = "PgBouncer case skipped: pgbouncer not found on PATH nor in /usr/sbin, /usr/local/sbin, /sbin (give --pgbouncer PATH)"
	default:
		bouncer, err = startPgBouncer(ctx, bouncerBin, &srv.base.ConnConfig.Config, f.PoolSize, f.Daemons*f.MaxConns+50, f.Prepared)
		if err != nil {
			return err
		}
		defer bouncer.Stop()
		cases = append(cases, FleetCase{Daemons: f.Daemons, PgBouncer: true})
		if f.Prepared {
			cases = append(cases, FleetCase{Daemons: f.Daemons, PgBouncer: true, Prepared: true})
		}
		if f.Procs > 0 {
			cases = append(cases, FleetCase{Daemons: f.Daemons, PgBouncer: true, Procs: f.Procs})
		}
		bouncerNote = fmt.Sprintf("PgBouncer %s in transaction mode, default_pool_size=%d (server connections of all daemons together), "+
			"connect_query %q (the daemon's session settings), daemons with --pgbouncer (poll only)", bouncerBin, f.PoolSize, pgplan.ConnectQuery())
	}
	if bouncer == nil {
		fmt.Fprintln(errOut, bouncerNote)
	}

	fmt.Fprintf(out, "# fleet: %d no-op tasks over %d tenants per run burnt down by agentd processes; total concurrency %d split evenly "+
		"(1 daemon: --concurrency %d; %d daemons: --concurrency %d each); --batch-size %d, --max-conns %d per daemon, "+
		"--poll-interval %s; %d rounds, each running every case in turn, the order rotated each round\n# %s\n# %s; %s, GOMAXPROCS=%d, %d CPUs; load average %s\n",
		f.Tasks, f.Tenants, f.Concurrency, f.Concurrency, f.Daemons, f.Concurrency/f.Daemons, f.Batch, f.MaxConns, f.PollInterval,
		f.Rounds, bouncerNote, srv.Describe(ctx), runtime.Version(), runtime.GOMAXPROCS(0), runtime.NumCPU(), loadAverage())
	fmt.Fprintf(out, "# tasks/claim, tasks/complete: tasks per claim and per succeed statement (the tasks of one share its daemon and "+
		"started_at, or ended_at, in attempt_records); secs: the release of the daemons' first claims, held back until every daemon is up, → the last completion "+
		"(attempt_records.ended_at), on the server's clock; steady/s: the tasks completed between the 10th and the 90th percentile of the completions over that time; start s, tail s: release → the 10th percentile's completion, the 90th's → the last; CPU over release → burn-down seen, agentd from /proc, "+
		"pg: the server's processes less the benchmark's own backends and other databases' (its background processes are shared); conns/daemon: most connections one daemon had at once "+
		"(direct: its backends by application_name; via pgbouncer: its client connections to PgBouncer, SHOW CLIENTS); "+
		"backends: most backends of all daemons at once; deadlocks, rollbacks: pg_stat_database of the run's database; "+
		"conflicts: daemons' log lines naming a serialization failure, deadlock or lock timeout\n\n")

	results := map[FleetCase][]FleetResult{}
	t := NewTable("round", "case", "conc/daemon", "secs", "start s", "tail s", "tasks/s", "steady/s", "agentd cores", "pg cores", "agentd us/task", "pg us/task",
		"tasks/claim", "tasks/complete", "conns/daemon", "backends", "deadlocks", "rollbacks", "conflicts", "attempts", "once")
	var failed []string
	for round := 1; round <= f.Rounds; round++ {
		// The order rotates each round: no case always runs first, on a
		// cluster the previous runs left warm (or behind a checkpoint).
		for i := range cases {
			c := cases[(round-1+i)%len(cases)]
			if ctx.Err() != nil {
				return ctx.Err()
			}
			r, err := fleetRun(ctx, srv, f, c, round, bin, dir, bouncer, errOut)
			if err != nil {
				return fmt.Errorf("round %d, %s: %w", round, c.label(), err)
			}
			results[c] = append(results[c], r)
			t.Add(r.cells(f)...)
			if r.OnceFailed != "" {
				failed = append(failed, fmt.Sprintf("round %d, %s: %s", round, c.label(), r.OnceFailed))
			}
			rate := fmt.Sprintf("%.0f tasks/s", r.Rate)
			if r.TimedOut {
				rate = "timed out"
			}
			fmt.Fprintf(errOut, "round %d, %s: %s (load average %s)\n", round, c.label(), rate, loadAverage())
		}
	}
	t.Print(out)
	fmt.Fprintf(out, "\n# load average at the end (1, 5, 15 min): %s — the machine's other work shares its CPUs with the runs\n\n", loadAverage())
	printFleetSummary(out, cases, results, f.Tasks)
	fmt.Fprintln(out)
	printFleetWaits(out, cases, results)
	if len(failed) > 0 {
		return fmt.Errorf("not every task succeeded exactly once: %s", strings.Join(failed, "; "))
	}
	return nil
}

// fleetRun measures one case on a fresh database: the tasks are inserted,
// the daemons started while an EXCLUSIVE lock on tasks holds every claim
// back, and released together once each daemon's first claim waits on
// it — so that no daemon starts ahead of the others and the daemons'
// start-up is not measured.
func fleetRun(ctx context.Context, srv *Server, f FleetFlags, c FleetCase, round int, bin, dir string, bouncer *PgBouncer,
	errOut io.Writer) (FleetResult, error) {
	res := FleetResult{Case: c, Round: round}
	ctx, cancel := context.WithTimeout(ctx, f.RunTimeout)
	defer cancel()

	rdb, err := srv.Fresh(ctx)
	if err != nil {
		return res, err
	}
	defer rdb.Close()
	pool := func(n int32, app string) (*pgxpool.Pool, error) {
		return pgxpool.NewWithConfig(ctx, srv.poolConfig(rdb.name, n, app))
	}
	ctl, err := pool(2, controlApp)
	if err != nil {
		return res, err
	}
	defer ctl.Close()
	if err := insertFleetTasks(ctx, ctl, f); err != nil {
		return res, err
	}
	if err := rdb.Settle(ctx, ctl); err != nil {
		return res, err
	}

	gatePool, err := pool(1, "agentbench-gate")
	if err != nil {
		return res, err
	}
	defer gatePool.Close()
	gate, err := gatePool.Begin(ctx)
	if err != nil {
		return res, err
	}
	defer gate.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // committed on the way, or given up
	if _, err := gate.Exec(ctx, "LOCK TABLE tasks IN EXCLUSIVE MODE"); err != nil {
		return res, err
	}

	spec := FleetSpec{Bin: bin, Daemons: c.Daemons, Procs: c.Procs, Concurrency: f.Concurrency / c.Daemons, Batch: f.Batch,
		MaxConns: cmp.Or(c.MaxConns, f.MaxConns), PollInterval: f.PollInterval, PgBouncer: c.PgBouncer, Prepared: c.Prepared, Dir: dir, LogLevel: f.LogLevel,
		URL: func(app string) (string, error) {
			u, err := srv.url(rdb.name, app)
			if err != nil || !c.PgBouncer {
				return u, err
			}
			return bouncer.URL(u)
		}}
	fleet := NewFleet(spec)
	stopped := false
	defer func() {
		if !stopped {
			_ = fleet.Stop()
		}
	}()
	// One at a time: the schema check at agentd's start takes a session
	// advisory lock, which through PgBouncer in transaction mode may be
	// taken on one server connection and not released on another when
	// daemons start together — the others then wait for it for minutes.
	for i := 1; i <= c.Daemons; i++ {
		if err := fleet.StartNext(); err != nil {
			return res, err
		}
		if err := waitGated(ctx, ctl, fleet, i); err != nil {
			if tails := fleet.Tails(); tails != "" && ctx.Err() == nil {
				err = fmt.Errorf("%w; the daemons logged:\n%s", err, tails)
			}
			return res, err
		}
	}

	sampler, err := pool(1, "agentbench-sampler")
	if err != nil {
		return res, err
	}
	defer sampler.Close()
	var admin *pgx.Conn
	if c.PgBouncer {
		if admin, err = bouncer.Admin(ctx); err != nil {
			return res, err
		}
		defer admin.Close(context.WithoutCancel(ctx))
	}
	dl0, rb0, err := dbConflictCounters(ctx, ctl)
	if err != nil {
		return res, err
	}
	srv0, srvErr := serverCPU(ctx, ctl, nil)
	// The burn-down is timed from here on the server's clock: the held
	// claims' started_at is when they were sent, before the release.
	var released time.Time
	if err := gate.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&released); err != nil {
		return res, err
	}
	d0, at := fleet.CPU(), time.Now()
	if err := gate.Commit(ctx); err != nil {
		return res, fmt.Errorf("releasing the daemons: %w", err)
	}
	// Sampled from the release on: the claims held back by the gate are
	// no lock waits of the burn-down.
	act := StartActivity(ctx, sampler, admin, rdb.name)

	burnErr := waitFleetBurnDown(ctx, ctl, fleet)
	res.DaemonCPU, res.Wall = fleet.CPU()-d0, time.Since(at)
	if srvErr == nil {
		if srv1, err := serverCPU(context.WithoutCancel(ctx), ctl, srv0); err == nil {
			for kind, d := range serverCPUSpent(*srv0, *srv1) {
				// Not the benchmark's own backends, nor those of other
				// databases (another benchmark on a shared cluster).
				if !strings.HasPrefix(kind, "client agentbench-") && kind != "client backend" {
					res.ServerCPU += d
				}
			}
			res.CPUKnown = true
		}
	}
	if res.Activity, err = act.Stop(); err != nil { // a failed sample loses figures, not the run
		fmt.Fprintf(errOut, "round %d, %s: %v\n", round, c.label(), err)
	}
	stopped = true
	stopErr := fleet.Stop()
	res.Conflicts = fleet.Conflicts()
	if errors.Is(burnErr, context.DeadlineExceeded) {
		res.TimedOut = true
		return res, nil
	}
	if burnErr != nil {
		return res, burnErr
	}
	if stopErr != nil {
		return res, stopErr
	}

	sctx, cancelStats := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancelStats()
	dl1, rb1, err := dbConflictCounters(sctx, ctl)
	if err != nil {
		return res, err
	}
	res.Deadlocks, res.Rollbacks = dl1-dl0, rb1-rb0
	if err := res.check(sctx, ctl, f.Tasks, released); err != nil {
		return res, err
	}
	return res, nil
}

// insertFleetTasks inserts the run's tasks: through Store.EnqueueBatch for
// one tenant, the daemons' own path; over several in one statement, as the
// fairshare command does.
func insertFleetTasks(ctx context.Context, db *pgxpool.Pool, f FleetFlags) error {
	if f.Tenants == 1 {
		_, err := insertNoops(ctx, db, f.Tasks, f.InsertBatch)
		return err
	}
	if _, err := db.Exec(ctx, spreadTasksSQL, f.Tasks, f.Tenants); err != nil {
		return fmt.Errorf("inserting tasks over %d tenants: %w", f.Tenants, err)
	}
	return nil
}

// waitGated waits until n daemons have a backend waiting for the gate's
// lock on tasks — each its first claim.
func waitGated(ctx context.Context, db *pgxpool.Pool, fleet *Fleet, n int) error {
	deadline := time.Now().Add(time.Minute)
	for {
		var waiting int
		err := db.QueryRow(ctx, `SELECT count(DISTINCT a.application_name)
FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
WHERE NOT l.granted AND l.locktype = 'relation' AND l.relation = 'tasks'::regclass
	AND a.datname = current_database() AND a.application_name LIKE '`+fleetAppPrefix+`%'`).Scan(&waiting)
		if err != nil {
			return err
		}
		if waiting == n {
			return nil
		}
		if err := fleet.Exited(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after a minute %d of the %d daemons started are waiting to claim", waiting, n)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// waitFleetBurnDown returns when every task succeeded, or a daemon exits.
// It polls every 100ms: the time measured is the attempts', not when the
// poll saw the end. The poll asks the partial indexes of runnable and
// running tasks whether any is left; only then are the tasks counted.
// Counting them at each poll read the whole table: with 300,000 tasks a
// parallel scan, whose workers the server's CPU figures counted as the
// daemons'.
func waitFleetBurnDown(ctx context.Context, db *pgxpool.Pool, fleet *Fleet) error {
	for {
		var busy bool
		if err := db.QueryRow(ctx, fleetBusySQL).Scan(&busy); err != nil {
			return err
		}
		if !busy {
			var left int64
			if err := db.QueryRow(ctx, leftTasksSQL, 0).Scan(&left); err != nil {
				return err
			}
			if left == 0 {
				return nil
			}
		}
		if err := fleet.Exited(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// fleetBusySQL is whether a task is still runnable or running, read through
// tasks_runnable_tenant_idx and tasks_leased_idx (their predicates).
const fleetBusySQL = `SELECT EXISTS (SELECT FROM tasks WHERE queue = 'default' AND state IN ('queued', 'retrying')
		ORDER BY queue, tenant, priority, run_at, id LIMIT 1)
	OR EXISTS (SELECT FROM tasks WHERE queue = 'default' AND state = 'running' ORDER BY queue, lease_expires_at LIMIT 1)`

// dbConflictCounters reads the run database's deadlocks and rollbacks.
func dbConflictCounters(ctx context.Context, db *pgxpool.Pool) (deadlocks, rollbacks int64, err error) {
	err = db.QueryRow(ctx, `SELECT deadlocks, xact_rollback FROM pg_stat_database WHERE datname = current_database()`).
		Scan(&deadlocks, &rollbacks)
	return deadlocks, rollbacks, err
}

// check reads the burn-down's time, from the release to the last attempt's
// end, and checks that every task succeeded exactly once: one attempt
// each, that attempt succeeded.
func (r *FleetResult) check(ctx context.Context, db *pgxpool.Pool, tasks int, released time.Time) error {
	var secs float64
	var distinct, okAttempts int64
	err := db.QueryRow(ctx, `
SELECT extract(epoch FROM max(ended_at) - $1)::float8, count(*), count(DISTINCT task_id),
	count(DISTINCT (worker, started_at)), count(DISTINCT (worker, ended_at)),
	count(*) FILTER (WHERE outcome = 'succeeded'),
	(SELECT count(*) FROM tasks WHERE state = 'succeeded'),
	(SELECT count(*) FROM (SELECT task_id FROM attempt_records GROUP BY task_id HAVING count(*) > 1) d)
FROM attempt_records`, released).Scan(&secs, &r.Attempts, &distinct, &r.Claims, &r.Completes, &okAttempts, &r.Succeeded, &r.Duplicate)
	if err != nil {
		return fmt.Errorf("reading the attempts: %w", err)
	}
	r.Elapsed = time.Duration(secs * float64(time.Second))
	r.Rate = float64(tasks) / secs
	var mid, start, tail float64
	if err := db.QueryRow(ctx, `
SELECT coalesce(extract(epoch FROM p90 - p10)::float8, 0), coalesce(extract(epoch FROM p10 - $1)::float8, 0),
	coalesce(extract(epoch FROM last - p90)::float8, 0)
FROM (SELECT percentile_disc(0.1) WITHIN GROUP (ORDER BY ended_at) AS p10,
	percentile_disc(0.9) WITHIN GROUP (ORDER BY ended_at) AS p90, max(ended_at) AS last
	FROM attempt_records) p`, released).Scan(&mid, &start, &tail); err != nil {
		return fmt.Errorf("reading the attempts: %w", err)
	}
	r.Start, r.Tail = time.Duration(start*float64(time.Second)), time.Duration(tail*float64(time.Second))
	if mid > 0 {
		r.Steady = 0.8 * float64(tasks) / mid
	}
	n := int64(tasks)
	switch {
	case r.Succeeded != n:
		r.OnceFailed = fmt.Sprintf("%d of %d tasks succeeded", r.Succeeded, n)
	case r.Attempts != n || distinct != n || r.Duplicate != 0:
		r.OnceFailed = fmt.Sprintf("%d attempts of %d tasks, %d tasks attempted more than once", r.Attempts, distinct, r.Duplicate)
	case okAttempts != n:
		r.OnceFailed = fmt.Sprintf("%d of %d attempts succeeded", okAttempts, n)
	}
	return nil
}
