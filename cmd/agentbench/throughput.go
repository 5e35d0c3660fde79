package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/otlpsink"
)

// ThroughputFlags configure the throughput command.
type ThroughputFlags struct {
	CommonFlags
	Tasks       int
	InsertBatch int
	Pools       intList
	Processes   intList
	Concurrency intList
	Batch       intList
	MaxConns    int
	Repeat      int
	Tracing     string // off, on or both
	// Waiting tasks wait beside the burn-down, as WaitingKind says — for a
	// person's approval (waiting, their deadline in a day, each with its
	// pending request), a signal, a timer due in a day, or half each: they
	// must not slow the claims.
	Waiting     int
	WaitingKind string
}

// ThroughputCase is one configuration of the sweep.
type ThroughputCase struct {
	Pools       int  // worker.Pool instances, each with its own connection pool
	Procs       bool // each pool in a worker process of its own
	Concurrency int  // per pool
	Batch       int  // claim batch size per pool
	Tracing     bool // spans recorded and exported over OTLP/HTTP to a local sink
}

func (c ThroughputCase) label() string {
	l := fmt.Sprintf("p%d-c%d-b%d", c.Pools, c.Concurrency, c.Batch)
	if c.Procs {
		l = fmt.Sprintf("proc%d-c%d-b%d", c.Pools, c.Concurrency, c.Batch)
	}
	if c.Tracing {
		l += "-traced"
	}
	return l
}

// poolsCell is the table's pools column: "2", or "2proc" for processes.
func (c ThroughputCase) poolsCell() string {
	if c.Procs {
		return fmt.Sprintf("%dproc", c.Pools)
	}
	return strconv.Itoa(c.Pools)
}

// ThroughputResult is the outcome of one run.
type ThroughputResult struct {
	Case       ThroughputCase
	Tasks      int
	InsertRate float64       // tasks/s inserted by EnqueueBatch
	Elapsed    time.Duration // pools started → every task succeeded
	Rate       float64       // tasks/s
	Handled    int64         // handler calls (more than Tasks if some ran twice)
	Attempts   int64         // attempt_records rows
	Claims     int64         // claim statements that claimed something
	Completes  int64         // succeed statements that finished something
	CPU        CPUUse
	PeakRSS    int64 // bytes, of the (largest) worker process; 0 unknown
	Conns      int64 // most worker connections seen
	TimedOut   bool
}

func runThroughput(ctx context.Context, args []string, out, errOut io.Writer) error {
	f := ThroughputFlags{
		Pools:       intList{1, 2},
		Concurrency: intList{100, 500, 1000},
		Batch:       intList{100, 500, 1000},
	}
	fs := newFlagSet("throughput",
		"Pre-inserts no-op tasks, burns them down with worker pools (in this process, or in worker processes "+
			"with --processes) and reports tasks/s per configuration.", errOut)
	f.register(fs)
	fs.IntVar(&f.Tasks, "tasks", 50000, "tasks inserted before each run")
	fs.IntVar(&f.InsertBatch, "insert-batch", 1000, "tasks per EnqueueBatch call when inserting")
	fs.Var(&f.Pools, "pools", "comma-separated numbers of worker pools in this process to sweep")
	fs.Var(&f.Processes, "processes", "comma-separated numbers of worker processes to sweep, one pool each "+
		"(this program re-executed as \"agentbench worker\"); replaces the --pools sweep unless --pools is also given")
	fs.Var(&f.Concurrency, "concurrency", "comma-separated per-pool concurrencies to sweep")
	fs.Var(&f.Batch, "batch", "comma-separated claim batch sizes to sweep (skipped when above the concurrency)")
	fs.IntVar(&f.MaxConns, "max-conns", 8, "connection pool size of each worker pool")
	fs.IntVar(&f.Repeat, "repeat", 1, "run the whole sweep this many times")
	fs.IntVar(&f.Waiting, "waiting", 0, "tasks waiting beside the burn-down (state waiting, their deadline in a day), "+
		"inserted before the run's tasks; what they wait for is --waiting-kind's")
	fs.StringVar(&f.WaitingKind, "waiting-kind", waitingApproval, "what the --waiting tasks wait for: approval (each with its pending "+
		"request), signal (wait_for_signal, each its own key), timer (wait_timer) or mixed (signal and timer alternating)")
	fs.StringVar(&f.Tracing, "tracing", "off", "OpenTelemetry tracing of the pools in this process: off, on (spans exported "+
		"over OTLP/HTTP to a local sink, as agentd with OTEL_EXPORTER_OTLP_ENDPOINT set), or both (each run off, then on)")
	if err := parseFlags(fs, args, &f.CommonFlags); err != nil {
		return err
	}
	if f.Tasks <= 0 || f.InsertBatch <= 0 || f.Repeat <= 0 || f.MaxConns <= 0 {
		return errors.New("--tasks, --insert-batch, --max-conns and --repeat must be positive")
	}
	if f.Waiting < 0 {
		return errors.New("--waiting must not be negative")
	}
	if err := checkWaitingKind(f.WaitingKind); err != nil {
		return err
	}
	modes, err := tracingModes(f.Tracing)
	if err != nil {
		return err
	}
	if len(f.Processes) > 0 && f.Tracing != "off" {
		return errors.New("--tracing applies to the pools in this process: give it without --processes")
	}
	log, err := f.logger(errOut)
	if err != nil {
		return err
	}
	pools := f.Pools
	if len(f.Processes) > 0 && !flagSet(fs, "pools") {
		pools = nil
	}

	var cases []ThroughputCase
	for range f.Repeat {
		for _, procs := range []bool{false, true} {
			counts := pools
			if procs {
				counts = f.Processes
			}
			for _, p := range counts {
				for _, c := range f.Concurrency {
					for _, b := range f.Batch {
						for _, traced := range modes {
							if b <= c {
								cases = append(cases, ThroughputCase{Pools: p, Procs: procs, Concurrency: c, Batch: b, Tracing: traced})
							}
						}
					}
				}
			}
		}
	}
	if len(cases) == 0 {
		return errors.New("no configuration to run: every --batch is above every --concurrency")
	}

	srv, err := openServer(ctx, f.CommonFlags)
	if err != nil {
		return err
	}
	defer srv.Close()
	beside := ""
	if f.Waiting > 0 {
		beside = fmt.Sprintf(" beside %d tasks waiting (%s)", f.Waiting, f.WaitingKind)
	}
	fmt.Fprintf(out, "# throughput: %d no-op tasks per run%s, %d connections per pool; %s\n# %s, GOMAXPROCS=%d, %d CPUs\n",
		f.Tasks, beside, f.MaxConns, srv.Describe(ctx), runtime.Version(), runtime.GOMAXPROCS(0), runtime.NumCPU())
	fmt.Fprintf(out, "# pools: N in this process, Nproc in N worker processes; go = this process and the worker processes; "+
		"rss MB: peak resident set of the (largest) worker process during the burn-down; conns: most worker connections seen\n\n")

	t := NewTable(tracingColumn(f.Tracing, 3, append(append([]string{"pools", "conc", "batch", "tasks", "insert/s", "secs", "tasks/s", "claims",
		"avg claim", "completes", "avg complete", "attempts"}, cpuHeader...), "rss MB", "conns"))...)
	for _, c := range cases {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r, err := throughputRun(ctx, srv, f, c, log, out, errOut)
		if err != nil {
			return fmt.Errorf("run %s: %w", c.label(), err)
		}
		t.Add(tracingCell(f.Tracing, 3, c.Tracing, r.cells())...)
		fmt.Fprintf(errOut, "%s: %.0f tasks/s\n", c.label(), r.Rate)
	}
	t.Print(out)
	return nil
}

// cells formats the result as a row of the throughput table.
func (r ThroughputResult) cells() []any {
	rate := fmt.Sprintf("%.0f", r.Rate)
	if r.TimedOut {
		rate = "timeout"
	}
	c := r.Case
	row := []any{c.poolsCell(), c.Concurrency, c.Batch, r.Tasks, fmt.Sprintf("%.0f", r.InsertRate),
		fmt.Sprintf("%.2f", r.Elapsed.Seconds()), rate, r.Claims,
		fmt.Sprintf("%.1f", float64(r.Attempts)/float64(max(r.Claims, 1))), r.Completes,
		fmt.Sprintf("%.1f", float64(r.Attempts)/float64(max(r.Completes, 1))), r.Attempts}
	row = append(row, r.CPU.cells(r.Tasks)...)
	return append(row, mb(r.PeakRSS), r.Conns)
}

// throughputRun measures one configuration on a fresh database.
func throughputRun(ctx context.Context, srv *Server, f ThroughputFlags, c ThroughputCase, log *slog.Logger, out, errOut io.Writer) (ThroughputResult, error) {
	res := ThroughputResult{Case: c, Tasks: f.Tasks}
	ctx, cancel := context.WithTimeout(ctx, f.RunTimeout)
	defer cancel()

	rdb, ctl, err := srv.FreshControl(ctx)
	if err != nil {
		return res, err
	}
	defer rdb.Close()
	defer ctl.Close()

	var waiting int64
	settle := []string{"tasks", "task_attempts"}
	if f.Waiting > 0 {
		if waiting, err = insertWaitingKind(ctx, ctl, f.Waiting, f.WaitingKind); err != nil {
			return res, err
		}
		if f.WaitingKind == waitingApproval {
			settle = append(settle, "approvals")
		} else {
			settle = append(settle, "waits")
		}
	}
	if res.InsertRate, err = insertNoops(ctx, ctl, f.Tasks, f.InsertBatch); err != nil {
		return res, err
	}
	if err := rdb.Settle(ctx, ctl, settle...); err != nil {
		return res, err
	}
	b := BurnDown{Case: c, Tasks: f.Tasks, MinID: waiting, MaxConns: int32(f.MaxConns),
		Flags: f.CommonFlags, Log: log, Out: out, ErrOut: errOut}
	var traces *otlpsink.Sink
	var stopTracing func() error
	if c.Tracing {
		if traces, stopTracing, err = traceOn(ctx); err != nil {
			return res, fmt.Errorf("tracing: %w", err)
		}
	}
	r, err := b.Run(ctx, rdb, ctl)
	if stopTracing != nil {
		if serr := stopTracing(); serr != nil && err == nil {
			err = fmt.Errorf("tracing: flushing spans: %w", serr)
		}
		n, names, cerr := sinkCounts(traces)
		if cerr != nil && err == nil {
			err = cerr
		}
		fmt.Fprintf(errOut, "%s: the sink got %d spans %v\n", c.label(), n, names)
	}
	if err != nil {
		return res, err
	}
	r.InsertRate = res.InsertRate
	return r, nil
}

// insertWaiting inserts n tasks waiting for a person's approval, as the
// approval gate leaves them — waiting, their deadline when their request
// expires in a day, saying why, each with its pending request — and
// returns the highest id.
func insertWaiting(ctx context.Context, db *pgxpool.Pool, n int) (int64, error) {
	var last int64
	err := db.QueryRow(ctx, `WITH t AS (
		INSERT INTO tasks (tenant, queue, kind, payload, state, run_at, wait_reason)
		SELECT 'default', 'default', 'steps',
			'{"steps":[{"tool":"http_request","args":{"method":"POST","url":"https://pay.example/refunds"},"approve":true}]}',
			'waiting', now() + interval '1 day', 'waiting for approval'
		FROM generate_series(1, $1)
		RETURNING id, generation, tenant
	), r AS (
		INSERT INTO approvals (task_id, generation, step, tenant, tool, class, request, expires_at)
		SELECT id, generation, 'tool/0', tenant, 'http_request', 'keyed', '{"method":"POST","url":"https://pay.example/refunds"}',
			now() + interval '1 day' FROM t
	)
	SELECT max(id) FROM t`, n).Scan(&last)
	if err != nil {
		return 0, fmt.Errorf("inserting waiting tasks: %w", err)
	}
	return last, nil
}

// insertNoops inserts n no-op tasks in batches and returns the rate.
func insertNoops(ctx context.Context, db *pgxpool.Pool, n, batchSize int) (float64, error) {
	store := claims.New(db)
	batch := make([]claims.EnqueueParams, 0, batchSize)
	start := time.Now()
	for done := 0; done < n; done += len(batch) {
		batch = batch[:0]
		for i := done; i < n && len(batch) < batchSize; i++ {
			batch = append(batch, claims.EnqueueParams{Kind: "noop"})
		}
		if _, err := store.EnqueueBatch(ctx, batch); err != nil {
			return 0, fmt.Errorf("inserting tasks: %w", err)
		}
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// BurnDown is one measured burn-down of tasks already inserted.
type BurnDown struct {
	Case     ThroughputCase
	Tasks    int       // tasks to burn down
	MinID    int64     // only tasks above this id are the run's (growth pre-inserts others)
	Since    time.Time // only attempts that started since are the run's (effects replays)
	MaxConns int32
	Daemon   DaemonSpec // for daemons in this process
	Flags    CommonFlags
	Log      *slog.Logger
	Out      io.Writer
	ErrOut   io.Writer
}

// Run starts the workers, measures until every task of the run succeeded,
// stops them and counts the statements. ctl is a small pool to the run's
// database.
func (b BurnDown) Run(ctx context.Context, rdb *RunDB, ctl *pgxpool.Pool) (ThroughputResult, error) {
	c := b.Case
	res := ThroughputResult{Case: c, Tasks: b.Tasks}
	var (
		w   Workers
		err error
	)
	if c.Procs {
		w, err = StartProcWorkers(ctx, rdb, ProcSpec{Procs: c.Pools, Concurrency: c.Concurrency, Batch: c.Batch,
			MaxConns: b.MaxConns, Tasks: b.Tasks, LogLevel: b.Flags.LogLevel, ErrOut: b.ErrOut})
	} else {
		w, err = NewPoolWorkers(ctx, rdb, PoolSpec{Pools: c.Pools, Concurrency: c.Concurrency, Batch: c.Batch,
			MaxConns: b.MaxConns, Daemon: b.Daemon, Tasks: b.Tasks, Log: b.Log})
	}
	if err != nil {
		return res, err
	}
	stopped := false
	defer func() {
		if !stopped {
			_, _ = w.Stop()
		}
	}()

	var stats *PGStats
	if b.Flags.PGStats {
		if stats, err = StartPGStats(ctx, ctl); err != nil {
			return res, err
		}
	}
	prof, err := StartProfile(b.Flags.CPUProfile, c.label())
	if err != nil {
		return res, err
	}

	conns := StartConnSampler(ctx, ctl)
	cpu := StartCPU(ctx, ctl, w.PIDs()...)
	start := time.Now()
	if err := w.Start(ctx); err != nil {
		conns.Stop()
		prof.Stop()
		return res, err
	}
	end, err := waitBurnDown(ctx, ctl, w.AllHandled(), leftTasksSQL, b.MinID)
	res.CPU = cpu.Stop(ctx)
	prof.Stop()
	res.Conns = conns.Stop()
	res.PeakRSS, _ = w.Stop() // an unclean stop after a finished run only loses the RSS figure
	stopped = true
	if errors.Is(err, context.DeadlineExceeded) {
		res.TimedOut = true
		err = nil
	}
	if err != nil {
		return res, err
	}
	res.Elapsed = end.Sub(start)
	res.Rate = float64(b.Tasks) / res.Elapsed.Seconds()
	res.Handled = w.Handled()

	// Count statements from the attempts: all tasks claimed by one claim
	// statement share its now() as started_at, all finished by one succeed
	// statement share ended_at.
	sctx, cancelStats := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancelStats()
	if err := ctl.QueryRow(sctx, `
SELECT count(*), count(DISTINCT (worker, started_at)), count(DISTINCT (worker, ended_at))
FROM attempt_records WHERE task_id > $1 AND started_at >= $2`, b.MinID, b.Since).Scan(&res.Attempts, &res.Claims, &res.Completes); err != nil {
		return res, err
	}
	if stats != nil {
		fmt.Fprintf(b.Out, "%s:\n", c.label())
		stats.Stop(sctx, b.Out, b.Tasks)
	}
	return res, nil
}

// leftTasksSQL counts the run's tasks (id above $1) not yet succeeded.
const leftTasksSQL = `SELECT count(*) FROM tasks WHERE id > $1 AND state <> 'succeeded'`

// waitBurnDown returns when the run ended: the moment allDone closed —
// the workers' own report that every outcome is written — once leftSQL
// (with args) confirms nothing is left. The check runs after the clock
// stops: a count over the run's table takes tens of milliseconds at 50,000
// tasks, which timed from the signal would weigh on the faster side, and
// River's own benchmark stops at its last completion event. Where the
// report can come before the writes (a handler's count), the run ends at
// the send of the first check that finds nothing left, checked every 20
// ms; a check every 5 s is the safety net for a report that never comes.
func waitBurnDown(ctx context.Context, db *pgxpool.Pool, allDone <-chan struct{}, leftSQL string, args ...any) (time.Time, error) {
	// left counts what is left, as of sent: the check's snapshot is
	// taken when it starts.
	left := func() (n int64, sent time.Time, err error) {
		sent = time.Now()
		err = db.QueryRow(ctx, leftSQL, args...).Scan(&n)
		return n, sent, err
	}
	safety := time.NewTicker(5 * time.Second)
	defer safety.Stop()
	for {
		select {
		case <-ctx.Done():
			return time.Now(), ctx.Err()
		case <-safety.C:
			n, sent, err := left()
			if err != nil {
				return time.Now(), err
			}
			if n == 0 {
				return sent, nil
			}
			continue
		case <-allDone:
		}
		done := time.Now()
		n, _, err := left()
		if err != nil {
			return time.Now(), err
		}
		if n == 0 {
			return done, nil
		}
		for {
			select {
			case <-ctx.Done():
				return time.Now(), ctx.Err()
			case <-time.After(20 * time.Millisecond): // a tighter poll competes with the run it measures
			}
			n, sent, err := left()
			if err != nil {
				return time.Now(), err
			}
			if n == 0 {
				return sent, nil
			}
		}
	}
}

// flagSet reports whether the flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
