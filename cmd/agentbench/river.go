package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// The river commands run the same measurements with River
// (github.com/riverqueue/river), a mature Go queue on PostgreSQL, on the same
// server and the same kind of fresh database, so that its figures stand
// beside ours.

// RiverFlags configure the river command.
type RiverFlags struct {
	CommonFlags
	Tasks             int
	InsertBatch       int
	MaxWorkers        intList
	FetchCooldown     time.Duration
	FetchPollInterval time.Duration
	MaxConns          int
	Repeat            int
}

// riverNoop is the no-op job's arguments.
type riverNoop struct{}

// Kind names the job kind.
func (riverNoop) Kind() string { return "agentbench_noop" }

// riverNoopWorker does nothing.
type riverNoopWorker struct {
	river.WorkerDefaults[riverNoop]
}

// Work does nothing.
func (w *riverNoopWorker) Work(context.Context, *river.Job[riverNoop]) error { return nil }

// RiverResult is the outcome of one River burn-down.
type RiverResult struct {
	MaxWorkers int
	Tasks      int
	InsertRate float64
	Elapsed    time.Duration
	Rate       float64
	Attempts   int64 // sum of river_job.attempt: Tasks when every job ran once
	CPU        CPUUse
	PeakRSS    int64
	Conns      int64
	TimedOut   bool
}

func runRiver(ctx context.Context, args []string, out, errOut io.Writer) error {
	f := RiverFlags{MaxWorkers: intList{1000, 2000}}
	fs := newFlagSet("river",
		"Pre-inserts no-op jobs with River's InsertMany, burns them down with a River client and reports jobs/s "+
			"per --max-workers: the throughput command's measurement with River.", errOut)
	f.register(fs)
	fs.IntVar(&f.Tasks, "tasks", 50000, "jobs inserted before each run")
	fs.IntVar(&f.InsertBatch, "insert-batch", 1000, "jobs per InsertMany call when inserting")
	fs.Var(&f.MaxWorkers, "max-workers", "comma-separated MaxWorkers of the default queue to sweep")
	fs.DurationVar(&f.FetchCooldown, "fetch-cooldown", 2*time.Millisecond,
		"River's FetchCooldown (River's own benchmark uses 2ms; the client's default is 100ms)")
	fs.DurationVar(&f.FetchPollInterval, "fetch-poll-interval", 20*time.Millisecond,
		"River's FetchPollInterval (River's own benchmark uses 20ms; the client's default is 1s)")
	fs.IntVar(&f.MaxConns, "max-conns", 8, "connection pool size of the River client (as for one worker pool of throughput)")
	fs.IntVar(&f.Repeat, "repeat", 1, "run the whole sweep this many times")
	if err := parseFlags(fs, args, &f.CommonFlags); err != nil {
		return err
	}
	if f.Tasks <= 0 || f.InsertBatch <= 0 || f.Repeat <= 0 || f.MaxConns <= 0 {
		return errors.New("--tasks, --insert-batch, --max-conns and --repeat must be positive")
	}
	if f.FetchCooldown < river.FetchCooldownMin || f.FetchPollInterval < river.FetchPollIntervalMin {
		return errors.New("--fetch-cooldown and --fetch-poll-interval must be at least 1ms")
	}
	srv, log, err := f.open(ctx, errOut)
	if err != nil {
		return err
	}
	defer srv.Close()
	fmt.Fprintf(out, "# river: %d no-op jobs per run (River %s), FetchCooldown %s, FetchPollInterval %s, %d connections; %s\n# %s, GOMAXPROCS=%d, %d CPUs\n\n",
		f.Tasks, riverVersion, f.FetchCooldown, f.FetchPollInterval, f.MaxConns, srv.Describe(ctx),
		runtime.Version(), runtime.GOMAXPROCS(0), runtime.NumCPU())

	t := NewTable(append(append([]string{"max workers", "jobs", "insert/s", "secs", "jobs/s", "attempts"},
		cpuHeader...), "rss MB", "conns")...)
	for range f.Repeat {
		for _, mw := range f.MaxWorkers {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			r, err := riverRun(ctx, srv, f, mw, log)
			if err != nil {
				return fmt.Errorf("river run with %d workers: %w", mw, err)
			}
			rate := fmt.Sprintf("%.0f", r.Rate)
			if r.TimedOut {
				rate = "timeout"
			}
			t.Add(append(append([]any{mw, r.Tasks, fmt.Sprintf("%.0f", r.InsertRate),
				fmt.Sprintf("%.2f", r.Elapsed.Seconds()), rate, r.Attempts}, r.CPU.cells(r.Tasks)...),
				mb(r.PeakRSS), r.Conns)...)
			fmt.Fprintf(errOut, "river w%d: %.0f jobs/s\n", mw, r.Rate)
		}
	}
	t.Print(out)
	return nil
}

// riverVersion is the River release this program is built with.
const riverVersion = "v0.51.2"

// riverDB prepares the run's database for River: its migrations applied
// (with --reset=truncate, its jobs emptied) and a pool of maxConns
// connections named WorkerApp for the client.
func riverDB(ctx context.Context, srv *Server, rdb *RunDB, maxConns int32) (*pgxpool.Pool, error) {
	pool, err := rdb.WorkerPool(ctx, maxConns)
	if err != nil {
		return nil, err
	}
	m, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Logger: slog.New(slog.DiscardHandler)})
	if err == nil {
		_, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	}
	if err == nil && srv.flags.Reset == "truncate" {
		_, err = pool.Exec(ctx, "TRUNCATE river_job RESTART IDENTITY")
	}
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("river migrations: %w", err)
	}
	return pool, nil
}

// riverRun measures one River burn-down on a fresh database.
func riverRun(ctx context.Context, srv *Server, f RiverFlags, maxWorkers int, log *slog.Logger) (RiverResult, error) {
	res := RiverResult{MaxWorkers: maxWorkers, Tasks: f.Tasks}
	ctx, cancel := context.WithTimeout(ctx, f.RunTimeout)
	defer cancel()

	rdb, ctl, err := srv.FreshControl(ctx)
	if err != nil {
		return res, err
	}
	defer rdb.Close()
	defer ctl.Close()
	db, err := riverDB(ctx, srv, rdb, int32(f.MaxConns))
	if err != nil {
		return res, err
	}
	defer db.Close()

	workers := river.NewWorkers()
	river.AddWorker(workers, &riverNoopWorker{})
	client, err := river.NewClient(riverpgxv5.New(db), &river.Config{
		FetchCooldown:     f.FetchCooldown,
		FetchPollInterval: f.FetchPollInterval,
		Logger:            log,
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: maxWorkers}},
		Workers:           workers,
	})
	if err != nil {
		return res, err
	}
	count, unsubscribe := countRiverEnds(client, f.Tasks)
	defer unsubscribe()

	batch := make([]river.InsertManyParams, 0, f.InsertBatch)
	insStart := time.Now()
	for done := 0; done < f.Tasks; done += len(batch) {
		batch = batch[:0]
		for i := done; i < f.Tasks && len(batch) < f.InsertBatch; i++ {
			batch = append(batch, river.InsertManyParams{Args: riverNoop{}})
		}
		if _, err := client.InsertMany(ctx, batch); err != nil {
			return res, fmt.Errorf("inserting jobs: %w", err)
		}
	}
	res.InsertRate = float64(f.Tasks) / time.Since(insStart).Seconds()
	if err := rdb.Settle(ctx, ctl, "river_job"); err != nil {
		return res, err
	}
	db.Reset() // the client starts from no connection, as the pools do
	resetPeakRSS()

	if err := burnRiver(ctx, ctl, client, count, f.CommonFlags, fmt.Sprintf("river-w%d", maxWorkers), &res); err != nil {
		return res, err
	}
	return res, nil
}

// countRiverEnds counts the jobs whose end River's completer has written
// (completed, failed or cancelled), from the events of a subscription, as
// River's own benchmark does: a worker's count comes before the completer
// writes. The channel holds every event of the run, so none is dropped.
func countRiverEnds(client *river.Client[pgx.Tx], total int) (*handledCounter, func()) {
	count := newHandledCounter(total)
	events, cancel := client.SubscribeConfig(&river.SubscribeConfig{ChanSize: total,
		Kinds: []river.EventKind{river.EventKindJobCompleted, river.EventKindJobFailed, river.EventKindJobCancelled}})
	go func() {
		for range events {
			count.add(1)
		}
	}()
	return count, cancel
}

// burnRiver starts client on the inserted jobs and measures until every
// job is completed (count, checked in river_job through ctl): the run's
// time, rate, CPU, peak RSS, connections and attempts go to res, and
// TimedOut is set when ctx ended first. The client is stopped gracefully.
func burnRiver(ctx context.Context, ctl *pgxpool.Pool, client *river.Client[pgx.Tx], count *handledCounter,
	f CommonFlags, label string, res *RiverResult) error {
	prof, err := StartProfile(f.CPUProfile, label)
	if err != nil {
		return err
	}
	conns := StartConnSampler(ctx, ctl)
	cpu := StartCPU(ctx, ctl)
	start := time.Now()
	// The client's lifetime is not ctx's: cancelling Start's context stops
	// it abruptly; Stop below stops it gracefully.
	if err := client.Start(context.WithoutCancel(ctx)); err != nil {
		conns.Stop()
		prof.Stop()
		return err
	}
	end, err := waitBurnDown(ctx, ctl, count.done, `SELECT count(*) FROM river_job WHERE state <> 'completed'`)
	res.CPU = cpu.Stop(ctx)
	prof.Stop()
	res.Conns = conns.Stop()
	res.PeakRSS = peakRSS("self")
	stopCtx, cancelStop := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancelStop()
	if serr := client.Stop(stopCtx); serr != nil && err == nil {
		err = fmt.Errorf("stopping the River client: %w", serr)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		res.TimedOut = true
		return nil
	}
	if err != nil {
		return err
	}
	res.Elapsed = end.Sub(start)
	res.Rate = float64(res.Tasks) / res.Elapsed.Seconds()
	return ctl.QueryRow(stopCtx, "SELECT coalesce(sum(attempt), 0) FROM river_job").Scan(&res.Attempts)
}
