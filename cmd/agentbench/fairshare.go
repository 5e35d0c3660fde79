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

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/daemon"
	"github.com/agentledger/agentledger/worker"
)

// FairFlags configure the fairshare command.
type FairFlags struct {
	CommonFlags
	Tenants     intList
	Tasks       int
	ClaimBatch  int
	Concurrency int
	Batch       int
	MaxConns    int
	Repeat      int

	Backlog        int
	Samples        int
	Rate           int
	Hold           time.Duration
	LatConcurrency int
	LatBatch       int
	SkipCost       bool
	SkipLatency    bool
}

// FairCost is what fair share costs the claim at one number of tenants.
type FairCost struct {
	Tenants int
	Claim   Percentiles
	Burn    ThroughputResult
}

// FairLatency is tenant B's enqueue → start while A's backlog drains.
type FairLatency struct {
	Start      Percentiles
	Started    int
	ALeft      int64 // A's tasks not yet started when B's last task started
	AStarted   int64 // A's tasks started during the sampling
	Sampling   time.Duration
	Duplicates int64
}

func runFairShare(ctx context.Context, args []string, out, errOut io.Writer) error {
	f := FairFlags{Tenants: intList{1, 10, 1000}}
	fs := newFlagSet("fairshare",
		"Measures fair share between tenants in the claim. Cost: for each --tenants count, --tasks no-op tasks "+
			"spread evenly over that many tenants are claimed serially (Claim of Limit --claim-batch, each followed by "+
			"an untimed SucceedMany), then as many are burnt down by one pool. Latency: tenant a holds --backlog "+
			"queued tasks (each holding its slot for --hold) and one daemon works them while tenant b enqueues "+
			"--samples single tasks at --rate: b's enqueue → start.", errOut)
	f.register(fs)
	fs.Var(&f.Tenants, "tenants", "comma-separated numbers of tenants to spread the cost runs' tasks over")
	fs.IntVar(&f.Tasks, "tasks", 20000, "cost runs: tasks claimed serially, then as many burnt down")
	fs.IntVar(&f.ClaimBatch, "claim-batch", 100, "cost runs: Limit of each timed Claim call")
	fs.IntVar(&f.Concurrency, "concurrency", 1000, "cost runs: burn-down pool concurrency")
	fs.IntVar(&f.Batch, "batch", 1000, "cost runs: burn-down claim batch size")
	fs.IntVar(&f.MaxConns, "max-conns", 8, "connection pool size of the daemon")
	fs.IntVar(&f.Repeat, "repeat", 1, "run the cost sweep this many times")
	fs.IntVar(&f.Backlog, "backlog", 100_000, "latency run: tenant a's queued tasks (one INSERT … SELECT)")
	fs.IntVar(&f.Samples, "samples", 300, "latency run: tenant b's tasks, enqueued one at a time")
	fs.IntVar(&f.Rate, "rate", 50, "latency run: tenant b's tasks per second")
	fs.DurationVar(&f.Hold, "hold", 5*time.Millisecond, "latency run: how long each of a's tasks holds its slot")
	fs.IntVar(&f.LatConcurrency, "latency-concurrency", 100, "latency run: the daemon's concurrency (agentd's default)")
	fs.IntVar(&f.LatBatch, "latency-batch", 100, "latency run: the daemon's claim batch (agentd's default)")
	fs.BoolVar(&f.SkipCost, "no-cost", false, "skip the cost runs")
	fs.BoolVar(&f.SkipLatency, "no-latency", false, "skip the latency run")
	if err := parseFlags(fs, args, &f.CommonFlags); err != nil {
		return err
	}
	if f.Tasks <= 0 || f.ClaimBatch <= 0 || f.Concurrency <= 0 || f.Batch <= 0 || f.MaxConns <= 0 || f.Repeat <= 0 ||
		f.Backlog <= 0 || f.Samples <= 0 || f.Rate <= 0 || f.Hold < 0 || f.LatConcurrency <= 0 || f.LatBatch <= 0 {
		return errors.New("--tasks, --claim-batch, --concurrency, --batch, --max-conns, --repeat, --backlog, --samples, " +
			"--rate, --latency-concurrency and --latency-batch must be positive, --hold not negative")
	}
	srv, log, err := f.open(ctx, errOut)
	if err != nil {
		return err
	}
	defer srv.Close()
	fmt.Fprintf(out, "# fairshare: %s\n# %s, GOMAXPROCS=%d, %d CPUs\n", srv.Describe(ctx),
		runtime.Version(), runtime.GOMAXPROCS(0), runtime.NumCPU())

	if !f.SkipCost {
		fmt.Fprintf(out, "# cost: %d no-op tasks spread over N tenants, claimed serially by Claim calls of Limit %d "+
			"(the first left out; each call includes its commit), then %d more burnt down by 1 pool × %d × %d\n\n",
			f.Tasks, f.ClaimBatch, f.Tasks, f.Concurrency, f.Batch)
		t := NewTable(append([]string{"tenants", "claims", "claim p50 ms", "p90 ms", "p99 ms", "mean ms", "µs/task",
			"burn secs", "tasks/s"}, cpuHeader...)...)
		for range f.Repeat {
			for _, n := range f.Tenants {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				r, err := fairCostRun(ctx, srv, f, n, log, out, errOut)
				if err != nil {
					return fmt.Errorf("cost run with %d tenants: %w", n, err)
				}
				rate := fmt.Sprintf("%.0f", r.Burn.Rate)
				if r.Burn.TimedOut {
					rate = "timeout"
				}
				perTask := float64(r.Claim.Mean.Microseconds()) / float64(f.ClaimBatch)
				t.Add(append([]any{n, r.Claim.N, ms(r.Claim.P50), ms(r.Claim.P90), ms(r.Claim.P99), ms(r.Claim.Mean),
					fmt.Sprintf("%.1f", perTask), fmt.Sprintf("%.2f", r.Burn.Elapsed.Seconds()), rate},
					r.Burn.CPU.cells(f.Tasks)...)...)
				fmt.Fprintf(errOut, "fairshare %d tenants: claim p50 %s ms, %s tasks/s\n", n, ms(r.Claim.P50), rate)
			}
		}
		t.Print(out)
	}
	if !f.SkipLatency {
		fmt.Fprintf(out, "\n# latency: tenant a has %d tasks queued (each holds its slot %s) and one daemon "+
			"(concurrency %d, batch %d) works them; tenant b enqueues %d single tasks at %d/s meanwhile\n\n",
			f.Backlog, f.Hold, f.LatConcurrency, f.LatBatch, f.Samples, f.Rate)
		r, err := fairLatencyRun(ctx, srv, f, log)
		if err != nil {
			return fmt.Errorf("latency run: %w", err)
		}
		t := NewTable("b tasks", "started", "dup", "p50 ms", "p90 ms", "p99 ms", "max ms", "mean ms",
			"sampling secs", "a started meanwhile", "a left")
		t.Add(f.Samples, r.Started, r.Duplicates, ms(r.Start.P50), ms(r.Start.P90), ms(r.Start.P99), ms(r.Start.Max),
			ms(r.Start.Mean), fmt.Sprintf("%.1f", r.Sampling.Seconds()), r.AStarted, r.ALeft)
		t.Print(out)
	}
	return nil
}

// spreadTasksSQL inserts $1 due no-op tasks over $2 tenants (t0000, t0001,
// …; "default" when there is one), in one statement.
const spreadTasksSQL = `
INSERT INTO tasks (tenant, kind)
SELECT CASE WHEN $2 = 1 THEN 'default' ELSE 't' || lpad((g % $2)::text, 4, '0') END, 'noop'
FROM generate_series(1, $1::int) g`

// fairCostRun measures the claim with n tenants on a fresh database.
func fairCostRun(ctx context.Context, srv *Server, f FairFlags, n int, log *slog.Logger, out, errOut io.Writer) (FairCost, error) {
	res := FairCost{Tenants: n}
	ctx, cancel := context.WithTimeout(ctx, f.RunTimeout)
	defer cancel()
	rdb, ctl, err := srv.FreshControl(ctx)
	if err != nil {
		return res, err
	}
	defer rdb.Close()
	defer ctl.Close()

	if _, err := ctl.Exec(ctx, spreadTasksSQL, f.Tasks, n); err != nil {
		return res, err
	}
	if err := rdb.Settle(ctx, ctl); err != nil {
		return res, err
	}
	claimDB, err := rdb.DaemonPool(ctx, 1)
	if err != nil {
		return res, err
	}
	claimD, _, err := serialClaims(ctx, claims.New(claimDB), f.ClaimBatch)
	claimDB.Close()
	if err != nil {
		return res, err
	}
	waitDisconnected(ctx, ctl)
	res.Claim = Summarise(claimD)

	var minID int64
	if err := ctl.QueryRow(ctx, "SELECT coalesce(max(id), 0) FROM tasks").Scan(&minID); err != nil {
		return res, err
	}
	if _, err := ctl.Exec(ctx, spreadTasksSQL, f.Tasks, n); err != nil {
		return res, err
	}
	if err := rdb.Settle(ctx, ctl); err != nil {
		return res, err
	}
	b := BurnDown{Case: ThroughputCase{Pools: 1, Concurrency: f.Concurrency, Batch: f.Batch}, Tasks: f.Tasks,
		MinID: minID, MaxConns: int32(f.MaxConns), Flags: f.CommonFlags, Log: log, Out: out, ErrOut: errOut}
	res.Burn, err = b.Run(ctx, rdb, ctl)
	return res, err
}

// backlogSQL queues $1 tasks of tenant a of kind hold, in one statement.
const backlogSQL = `INSERT INTO tasks (tenant, kind) SELECT 'a', 'hold' FROM generate_series(1, $1::int)`

// fairLatencyRun measures tenant b's enqueue → start while tenant a's
// backlog drains, on a fresh database.
func fairLatencyRun(ctx context.Context, srv *Server, f FairFlags, log *slog.Logger) (FairLatency, error) {
	var res FairLatency
	ctx, cancel := context.WithTimeout(ctx, f.RunTimeout)
	defer cancel()
	rdb, ctl, err := srv.FreshControl(ctx)
	if err != nil {
		return res, err
	}
	defer rdb.Close()
	defer ctl.Close()
	if _, err := ctl.Exec(ctx, backlogSQL, f.Backlog); err != nil {
		return res, err
	}
	if err := rdb.Settle(ctx, ctl); err != nil {
		return res, err
	}
	enqDB, err := rdb.Pool(ctx, 3)
	if err != nil {
		return res, err
	}
	defer enqDB.Close()

	rec := newStarts(f.Samples)
	var aStarted, aAtLast atomic.Int64 // a's tasks started: in all, and when b's latest started
	aFirst := make(chan struct{})
	var firstA sync.Once
	hold := worker.HandlerFunc(func(ctx context.Context, _ *agentledger.Task) (json.RawMessage, error) {
		aStarted.Add(1)
		firstA.Do(func() { close(aFirst) })
		select {
		case <-time.After(f.Hold):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return json.RawMessage(`{}`), nil
	})
	rec.onStart = func(int64, int64) { aAtLast.Store(aStarted.Load()) }
	stamp := worker.HandlerFunc(func(_ context.Context, t *agentledger.Task) (json.RawMessage, error) {
		var p latencyPayload
		if err := json.Unmarshal(t.Payload, &p); err != nil || !rec.note(p.I, p.T) {
			return nil, agentledger.Permanent(fmt.Errorf("bad payload %s", t.Payload))
		}
		return json.RawMessage(`{}`), nil
	})
	w, err := NewPoolWorkers(ctx, rdb, PoolSpec{Pools: 1, Concurrency: f.LatConcurrency, Batch: f.LatBatch,
		MaxConns: int32(f.MaxConns), Tasks: f.Backlog + f.Samples, Log: log,
		Daemon: DaemonSpec{Kinds: map[string]worker.Handler{"hold": hold, "stamp": stamp},
			Configure: func(c *daemon.Config) { c.Worker.ID = "bench-fair" }}})
	if err != nil {
		return res, err
	}
	defer w.Stop()
	if err := w.Start(ctx); err != nil {
		return res, err
	}
	select { // b's tasks arrive once a's backlog is being worked
	case <-aFirst:
	case <-ctx.Done():
		return res, ctx.Err()
	}
	store := claims.New(enqDB)
	if err := openConns(ctx, enqDB, 2); err != nil {
		return res, err
	}
	aBefore := aStarted.Load()
	began := time.Now()
	sched := Schedule{Rate: f.Rate, Total: f.Samples, Enqueuers: 2}
	sent, err := sched.Run(ctx, rec.since, func(ctx context.Context, i, _ int, at int64) error {
		payload, _ := json.Marshal(latencyPayload{I: i, T: at})
		_, err := store.Enqueue(ctx, claims.EnqueueParams{Tenant: "b", Kind: "stamp", Payload: payload})
		return err
	})
	if err != nil {
		return res, fmt.Errorf("enqueue: %w", err)
	}
	rec.wait(ctx, 10*time.Second)
	res.Sampling = time.Since(began)
	var lr LatencyResult
	rec.fill(&lr, sent, 0)
	res.Start, res.Started, res.Duplicates = lr.Start, lr.Started, lr.Duplicates
	res.AStarted = aAtLast.Load() - aBefore
	res.ALeft = int64(f.Backlog) - aAtLast.Load()
	if res.Started < f.Samples {
		return res, fmt.Errorf("only %d of b's %d tasks started", res.Started, f.Samples)
	}
	if res.ALeft <= 0 {
		return res, fmt.Errorf("a's backlog drained before b's last task started: raise --backlog or --hold")
	}
	return res, nil
}
