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
	"github.com/agentledger/agentledger/client"
	"github.com/agentledger/agentledger/daemon"
	"github.com/agentledger/agentledger/tools"
	"github.com/agentledger/agentledger/worker"
)

// LatencyFlags configure the latency command.
type LatencyFlags struct {
	CommonFlags
	Rate         int
	Duration     time.Duration
	Warmup       time.Duration
	Enqueuers    int
	Submit       string // "store" or "daemon"
	Concurrency  int
	Batch        int
	PollInterval time.Duration
	PollOnly     bool
	Both         bool
	Cooldown     time.Duration
}

// latencyPayload is what each task carries: its sequence number and the
// benchmark's monotonic clock (ns since the run's base) just before Enqueue.
type latencyPayload struct {
	I int   `json:"i"`
	T int64 `json:"t"`
}

// LatencyResult is the outcome of one latency run.
type LatencyResult struct {
	Mode       string
	Scheduled  int
	Started    int
	Duplicates int64
	Achieved   float64 // tasks/s actually enqueued
	MaxLag     time.Duration
	Start      Percentiles // enqueue → handler start, after warm-up
	Enqueue    Percentiles // the Enqueue call, after warm-up
	CPU        CPUUse
}

func runLatency(ctx context.Context, args []string, out, errOut io.Writer) error {
	var f LatencyFlags
	fs := newFlagSet("latency",
		"Enqueues single tasks at a steady rate to an idle pool and reports enqueue→start latency percentiles.", errOut)
	f.register(fs)
	fs.IntVar(&f.Rate, "rate", 500, "tasks enqueued per second")
	fs.DurationVar(&f.Duration, "duration", 20*time.Second, "how long to enqueue")
	fs.DurationVar(&f.Warmup, "warmup", time.Second, "leading part of the run left out of the percentiles")
	fs.IntVar(&f.Enqueuers, "enqueuers", 4, "goroutines (and connections) enqueueing on the shared schedule")
	fs.StringVar(&f.Submit, "submit", "store", "how tasks are enqueued: store (claims.Store.Enqueue on the enqueuers' own connections; every task claimed) or daemon (the daemon's Client: its door, and an idle worker takes the task at its enqueue)")
	fs.IntVar(&f.Concurrency, "concurrency", 100, "worker pool concurrency")
	fs.IntVar(&f.Batch, "batch", 0, "claim batch size (0: the pool's default, the concurrency)")
	fs.DurationVar(&f.PollInterval, "poll-interval", 0, "the pool's poll interval (0: the worker default, 1s)")
	fs.DurationVar(&f.Cooldown, "claim-cooldown", 0, "the pool's claim cooldown (0: the worker default, 500µs; negative: none)")
	fs.BoolVar(&f.PollOnly, "poll-only", false, "disable LISTEN/NOTIFY: wake-ups by polling only")
	fs.BoolVar(&f.Both, "both", false, "run with LISTEN/NOTIFY, then --poll-only, and report both")
	if err := parseFlags(fs, args, &f.CommonFlags); err != nil {
		return err
	}
	if f.Rate <= 0 || f.Duration <= 0 || f.Enqueuers <= 0 || f.Concurrency <= 0 || f.Warmup < 0 || f.Batch < 0 {
		return errors.New("--rate, --duration, --enqueuers and --concurrency must be positive")
	}
	if f.Warmup >= f.Duration {
		return errors.New("--warmup must be shorter than --duration")
	}
	if f.Submit != "store" && f.Submit != "daemon" {
		return fmt.Errorf("--submit: %q is neither store nor daemon", f.Submit)
	}
	log, err := f.logger(errOut)
	if err != nil {
		return err
	}
	modes := []bool{f.PollOnly}
	if f.Both {
		modes = []bool{false, true}
	}

	srv, err := openServer(ctx, f.CommonFlags)
	if err != nil {
		return err
	}
	defer srv.Close()
	poll := f.PollInterval
	if poll == 0 {
		poll = time.Second
	}
	fmt.Fprintf(out, "# latency: %d tasks/s for %s (first %s left out), %d enqueuers (submit %s); pool concurrency %d, poll %s; %s\n# %s, GOMAXPROCS=%d, %d CPUs\n\n",
		f.Rate, f.Duration, f.Warmup, f.Enqueuers, f.Submit, f.Concurrency, poll, srv.Describe(ctx),
		runtime.Version(), runtime.GOMAXPROCS(0), runtime.NumCPU())

	t := NewTable(append([]string{"mode", "tasks", "started", "dup", "enq/s", "p50 ms", "p90 ms", "p99 ms",
		"p99.9 ms", "max ms", "mean ms", "enq p50 ms", "enq p99 ms", "max lag ms"}, cpuHeader...)...)
	for _, pollOnly := range modes {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		f.PollOnly = pollOnly
		r, err := latencyRun(ctx, srv, f, out, log)
		if err != nil {
			return fmt.Errorf("%s run: %w", r.Mode, err)
		}
		t.Add(append([]any{r.Mode, r.Scheduled, r.Started, r.Duplicates, fmt.Sprintf("%.0f", r.Achieved),
			ms(r.Start.P50), ms(r.Start.P90), ms(r.Start.P99), ms(r.Start.P999), ms(r.Start.Max), ms(r.Start.Mean),
			ms(r.Enqueue.P50), ms(r.Enqueue.P99), ms(r.MaxLag)}, r.CPU.cells(r.Scheduled)...)...)
		fmt.Fprintf(errOut, "%s: p50 %s ms, p99 %s ms\n", r.Mode, ms(r.Start.P50), ms(r.Start.P99))
	}
	t.Print(out)
	return nil
}

// latencyRun measures one mode on a fresh database.
func latencyRun(ctx context.Context, srv *Server, f LatencyFlags, out io.Writer, log *slog.Logger) (LatencyResult, error) {
	res := LatencyResult{Mode: "notify"}
	if f.PollOnly {
		res.Mode = "poll-only"
	}
	total := int(float64(f.Rate) * f.Duration.Seconds())
	res.Scheduled = total
	ctx, cancel := context.WithTimeout(ctx, f.RunTimeout)
	defer cancel()

	rdb, err := srv.Fresh(ctx)
	if err != nil {
		return res, err
	}
	defer rdb.Close()
	enqDB, err := rdb.Pool(ctx, int32(f.Enqueuers)+1)
	if err != nil {
		return res, err
	}
	defer enqDB.Close()

	rec := newStarts(total)
	handler := worker.HandlerFunc(func(ctx context.Context, t *agentledger.Task) (json.RawMessage, error) {
		var p latencyPayload
		if err := json.Unmarshal(t.Payload, &p); err != nil || !rec.note(p.I, p.T) {
			return nil, agentledger.Permanent(fmt.Errorf("bad payload %s", t.Payload))
		}
		return tools.Noop(ctx, t)
	})
	w, err := NewPoolWorkers(ctx, rdb, PoolSpec{Pools: 1, Concurrency: f.Concurrency, Batch: f.Batch, MaxConns: 8,
		Tasks: total, Log: log, Daemon: DaemonSpec{Kinds: map[string]worker.Handler{"stamp": handler},
			Configure: func(c *daemon.Config) {
				c.Worker.ID, c.Worker.PollInterval, c.Worker.PollOnly, c.Worker.ClaimCooldown = "bench-latency", f.PollInterval, f.PollOnly, f.Cooldown
			}}})
	if err != nil {
		return res, err
	}
	defer w.Stop()
	if err := w.Start(ctx); err != nil {
		return res, err
	}

	// Open the enqueuers' connections up front, and give the pool a moment
	// to connect and LISTEN.
	store := claims.New(enqDB)
	var viaDaemon client.Client
	if f.Submit == "daemon" {
		viaDaemon = w.Daemons[0].Client("")
	}
	if err := openConns(ctx, enqDB, f.Enqueuers); err != nil {
		return res, err
	}
	time.Sleep(200 * time.Millisecond)

	var stats *PGStats
	if f.PGStats {
		if stats, err = StartPGStats(ctx, enqDB); err != nil {
			return res, err
		}
	}
	prof, err := StartProfile(f.CPUProfile, "latency-"+res.Mode)
	if err != nil {
		return res, err
	}

	cpu := StartCPU(ctx, enqDB)
	sched := Schedule{Rate: f.Rate, Total: total, Enqueuers: f.Enqueuers}
	sent, err := sched.Run(ctx, rec.since, func(ctx context.Context, i, _ int, at int64) error {
		payload, _ := json.Marshal(latencyPayload{I: i, T: at})
		if viaDaemon != nil {
			_, err := viaDaemon.Submit(ctx, client.Request{Kind: "stamp", Payload: payload})
			return err
		}
		_, err := store.Enqueue(ctx, claims.EnqueueParams{Kind: "stamp", Payload: payload})
		return err
	})
	if err != nil {
		prof.Stop()
		return res, fmt.Errorf("enqueue: %w", err)
	}
	res.Achieved, res.MaxLag = sent.Achieved, sent.MaxLag

	// Wait for the stragglers: at most two poll intervals and a bit.
	wait := 2*max(f.PollInterval, time.Second) + 2*time.Second
	rec.wait(ctx, wait)
	res.CPU = cpu.Stop(ctx)
	prof.Stop()
	rec.fill(&res, sent, int(float64(f.Rate)*f.Warmup.Seconds()))
	if stats != nil {
		fmt.Fprintf(out, "%s:\n", res.Mode)
		sctx, c := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		stats.Stop(sctx, out, total)
		c()
	}
	if res.Started < total {
		return res, fmt.Errorf("only %d of %d tasks started within %s after the last enqueue", res.Started, total, wait)
	}
	return res, nil
}

// openConns opens n connections of pool up front (the enqueuers'), so that
// the first tasks of a schedule do not wait for them.
func openConns(ctx context.Context, pool *pgxpool.Pool, n int) error {
	held := make([]*pgxpool.Conn, 0, n)
	defer func() {
		for _, c := range held {
			c.Release()
		}
	}()
	for range n {
		c, err := pool.Acquire(ctx)
		if err != nil {
			return err
		}
		held = append(held, c)
	}
	return nil
}

// Schedule is an open-loop enqueue schedule: task i is due at t0 + i/Rate
// whatever happened to earlier ones; Enqueuers goroutines share it.
type Schedule struct {
	Rate, Total, Enqueuers int
	// Batch is how many consecutive tasks one enqueue call sends (at most;
	// 0 or 1: one). A batch is sent when its last task is due.
	Batch int
}

// Sent is what a schedule achieved.
type Sent struct {
	EnqueueDur []int64 // per task, ns: the call that sent it
	Achieved   float64 // tasks/s actually enqueued
	MaxLag     time.Duration
}

// Run calls enqueue(ctx, first, n, at) for the tasks first … first+n-1 of
// the schedule, in batches of Batch, at being since() just before the call,
// and returns when all were sent or one call failed.
func (s Schedule) Run(ctx context.Context, since func() int64, enqueue func(ctx context.Context, first, n int, at int64) error) (Sent, error) {
	res := Sent{EnqueueDur: make([]int64, s.Total)}
	batch := max(s.Batch, 1)
	var next, maxLag atomic.Int64
	interval := time.Second / time.Duration(s.Rate)
	t0 := time.Now().Add(10 * time.Millisecond)
	var wg sync.WaitGroup
	errs := make(chan error, s.Enqueuers)
	for range s.Enqueuers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(int64(batch)) - int64(batch))
				if i >= s.Total || ctx.Err() != nil {
					return
				}
				n := min(batch, s.Total-i)
				due := t0.Add(time.Duration(i+n-1) * interval)
				if d := time.Until(due); d > 0 {
					time.Sleep(d)
				} else if lag := int64(-d); lag > maxLag.Load() {
					maxLag.Store(lag) // racy maximum: good enough for a diagnostic
				}
				at := since()
				if err := enqueue(ctx, i, n, at); err != nil {
					errs <- err
					return
				}
				took := since() - at
				for j := i; j < i+n; j++ {
					res.EnqueueDur[j] = took
				}
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		return res, err
	default:
	}
	res.Achieved = float64(s.Total) / time.Since(t0).Seconds()
	res.MaxLag = time.Duration(maxLag.Load())
	return res, nil
}

// Summarise returns the percentiles of enqueue→start (lat, per task, 0 for
// a task that never started) and of the enqueue calls, leaving out the
// first skip tasks.
func (s Sent) Summarise(lat []int64, skip int) (start, enqueue Percentiles) {
	var starts, enqs []time.Duration
	for i := skip; i < len(lat); i++ {
		if l := atomic.LoadInt64(&lat[i]); l > 0 {
			starts = append(starts, time.Duration(l))
		}
		enqs = append(enqs, time.Duration(s.EnqueueDur[i]))
	}
	return Summarise(starts), Summarise(enqs)
}
