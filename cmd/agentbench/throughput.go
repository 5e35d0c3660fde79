package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/tools"
	"github.com/agentledger/agentledger/worker"
)

// ThroughputFlags configure the throughput command.
type ThroughputFlags struct {
	CommonFlags
	Tasks       int
	InsertBatch int
	Pools       intList
	Concurrency intList
	Batch       intList
	Repeat      int
}

// ThroughputCase is one configuration of the sweep.
type ThroughputCase struct {
	Pools       int // worker.Pool instances, each with its own connection pool
	Concurrency int // per pool
	Batch       int // claim batch size per pool
}

func (c ThroughputCase) label() string {
	return fmt.Sprintf("p%d-c%d-b%d", c.Pools, c.Concurrency, c.Batch)
}

// ThroughputResult is the outcome of one run.
type ThroughputResult struct {
	Case       ThroughputCase
	Tasks      int
	InsertRate float64       // tasks/s inserted by EnqueueBatch
	Elapsed    time.Duration // pools started → every task succeeded
	Rate       float64       // tasks/s
	Handled    int64         // handler calls (more than Tasks if some ran twice)
	Attempts   int64         // task_attempts rows
	Claims     int64         // claim statements that claimed something
	Completes  int64         // succeed statements that finished something
	CPU        CPUUse
	TimedOut   bool
}

func runThroughput(ctx context.Context, args []string, out, errOut io.Writer) error {
	f := ThroughputFlags{
		Pools:       intList{1, 2},
		Concurrency: intList{100, 500, 1000},
		Batch:       intList{100, 500, 1000},
	}
	fs := newFlagSet("throughput",
		"Pre-inserts no-op tasks, burns them down with worker pools and reports tasks/s per configuration.", errOut)
	f.register(fs)
	fs.IntVar(&f.Tasks, "tasks", 50000, "tasks inserted before each run")
	fs.IntVar(&f.InsertBatch, "insert-batch", 1000, "tasks per EnqueueBatch call when inserting")
	fs.Var(&f.Pools, "pools", "comma-separated numbers of worker pools in this process to sweep")
	fs.Var(&f.Concurrency, "concurrency", "comma-separated per-pool concurrencies to sweep")
	fs.Var(&f.Batch, "batch", "comma-separated claim batch sizes to sweep (skipped when above the concurrency)")
	fs.IntVar(&f.Repeat, "repeat", 1, "run the whole sweep this many times")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %v", fs.Args())
	}
	if err := f.check(); err != nil {
		return err
	}
	if f.Tasks <= 0 || f.InsertBatch <= 0 || f.Repeat <= 0 {
		return errors.New("--tasks, --insert-batch and --repeat must be positive")
	}
	log, err := f.logger(errOut)
	if err != nil {
		return err
	}

	var cases []ThroughputCase
	for range f.Repeat {
		for _, p := range f.Pools {
			for _, c := range f.Concurrency {
				for _, b := range f.Batch {
					if b <= c {
						cases = append(cases, ThroughputCase{Pools: p, Concurrency: c, Batch: b})
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
	fmt.Fprintf(out, "# throughput: %d no-op tasks per run; %s\n# %s, GOMAXPROCS=%d, %d CPUs\n\n",
		f.Tasks, srv.Describe(ctx), runtime.Version(), runtime.GOMAXPROCS(0), runtime.NumCPU())

	t := NewTable(append([]string{"pools", "conc", "batch", "tasks", "insert/s", "secs", "tasks/s", "claims",
		"avg claim", "completes", "avg complete", "attempts"}, cpuHeader...)...)
	for _, c := range cases {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r, err := throughputRun(ctx, srv, f, c, log, out)
		if err != nil {
			return fmt.Errorf("run %s: %w", c.label(), err)
		}
		rate := fmt.Sprintf("%.0f", r.Rate)
		if r.TimedOut {
			rate = "timeout"
		}
		t.Add(append([]any{c.Pools, c.Concurrency, c.Batch, r.Tasks, fmt.Sprintf("%.0f", r.InsertRate),
			fmt.Sprintf("%.2f", r.Elapsed.Seconds()), rate, r.Claims,
			fmt.Sprintf("%.1f", float64(r.Attempts)/float64(max(r.Claims, 1))), r.Completes,
			fmt.Sprintf("%.1f", float64(r.Attempts)/float64(max(r.Completes, 1))), r.Attempts},
			r.CPU.cells(r.Tasks)...)...)
		fmt.Fprintf(errOut, "%s: %.0f tasks/s\n", c.label(), r.Rate)
	}
	t.Print(out)
	return nil
}

// throughputRun measures one configuration on a fresh database.
func throughputRun(ctx context.Context, srv *Server, f ThroughputFlags, c ThroughputCase, log *slog.Logger, out io.Writer) (ThroughputResult, error) {
	res := ThroughputResult{Case: c, Tasks: f.Tasks}
	ctx, cancel := context.WithTimeout(ctx, f.RunTimeout)
	defer cancel()

	rdb, err := srv.Fresh(ctx)
	if err != nil {
		return res, err
	}
	defer rdb.Close()
	ctl, err := rdb.Pool(ctx, 2)
	if err != nil {
		return res, err
	}
	defer ctl.Close()

	// Pre-insert.
	store := claims.New(ctl)
	batch := make([]claims.EnqueueParams, 0, f.InsertBatch)
	insStart := time.Now()
	for done := 0; done < f.Tasks; done += len(batch) {
		batch = batch[:0]
		for i := done; i < f.Tasks && len(batch) < f.InsertBatch; i++ {
			batch = append(batch, claims.EnqueueParams{Kind: "noop"})
		}
		if _, err := store.EnqueueBatch(ctx, batch); err != nil {
			return res, fmt.Errorf("inserting tasks: %w", err)
		}
	}
	res.InsertRate = float64(f.Tasks) / time.Since(insStart).Seconds()
	if err := rdb.Settle(ctx, ctl); err != nil {
		return res, err
	}

	// Worker pools, each on its own connection pool: a LISTEN connection,
	// one claiming producer, the keeper and the completer, plus slack.
	var handled atomic.Int64
	allHandled := make(chan struct{})
	handler := worker.HandlerFunc(func(ctx context.Context, t *agentledger.Task) (json.RawMessage, error) {
		if handled.Add(1) == int64(f.Tasks) {
			close(allHandled)
		}
		return tools.Noop(ctx, t)
	})
	var pools []*worker.Pool
	var conns []*pgxpool.Pool
	defer func() {
		for _, p := range conns {
			p.Close()
		}
	}()
	for i := range c.Pools {
		db, err := rdb.Pool(ctx, 8)
		if err != nil {
			return res, err
		}
		conns = append(conns, db)
		p, err := worker.New(db, worker.Config{
			ID:          fmt.Sprintf("bench-%d", i+1),
			Concurrency: c.Concurrency,
			BatchSize:   c.Batch,
			Handlers:    map[string]worker.Handler{"noop": handler},
			Logger:      log,
		})
		if err != nil {
			return res, err
		}
		pools = append(pools, p)
	}

	var stats *PGStats
	if f.PGStats {
		if stats, err = StartPGStats(ctx, ctl); err != nil {
			return res, err
		}
	}
	prof, err := StartProfile(f.CPUProfile, c.label())
	if err != nil {
		return res, err
	}

	runCtx, stopPools := context.WithCancel(ctx)
	var wg sync.WaitGroup
	cpu := StartCPU(ctx, ctl)
	start := time.Now()
	for _, p := range pools {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.Run(runCtx); err != nil {
				log.Error("pool stopped with an error", "err", err)
			}
		}()
	}
	end, err := waitBurnDown(ctx, ctl, allHandled)
	res.CPU = cpu.Stop(ctx)
	prof.Stop()
	stopPools()
	wg.Wait()
	if errors.Is(err, context.DeadlineExceeded) {
		res.TimedOut = true
		err = nil
	}
	if err != nil {
		return res, err
	}
	res.Elapsed = end.Sub(start)
	res.Rate = float64(f.Tasks) / res.Elapsed.Seconds()
	res.Handled = handled.Load()

	// Count statements from the attempts: all tasks claimed by one claim
	// statement share its now() as started_at, all finished by one succeed
	// statement share ended_at.
	sctx, cancelStats := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancelStats()
	if err := ctl.QueryRow(sctx, `
SELECT count(*), count(DISTINCT (worker, started_at)), count(DISTINCT (worker, ended_at))
FROM task_attempts`).Scan(&res.Attempts, &res.Claims, &res.Completes); err != nil {
		return res, err
	}
	if stats != nil {
		fmt.Fprintf(out, "%s:\n", c.label())
		stats.Stop(sctx, out, f.Tasks)
	}
	return res, nil
}

// waitBurnDown returns when no task is left unfinished: checked as soon as
// the handler has seen every task, and every second as a safety net.
func waitBurnDown(ctx context.Context, db *pgxpool.Pool, allHandled <-chan struct{}) (time.Time, error) {
	left := func() (int64, error) {
		var n int64
		err := db.QueryRow(ctx, "SELECT count(*) FROM tasks WHERE state <> 'succeeded'").Scan(&n)
		return n, err
	}
	safety := time.NewTicker(time.Second)
	defer safety.Stop()
	for {
		select {
		case <-ctx.Done():
			return time.Now(), ctx.Err()
		case <-safety.C:
			n, err := left()
			if err != nil {
				return time.Now(), err
			}
			if n == 0 {
				return time.Now(), nil
			}
			continue
		case <-allHandled:
		}
		// Every handler ran: the last outcomes are on their way.
		for {
			n, err := left()
			if err != nil {
				return time.Now(), err
			}
			if n == 0 {
				return time.Now(), nil
			}
			select {
			case <-ctx.Done():
				return time.Now(), ctx.Err()
			case <-time.After(20 * time.Millisecond): // a tighter poll competes with the run it measures
			}
		}
	}
}
