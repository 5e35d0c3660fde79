package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
)

// RiverLatencyFlags configure the river-latency command.
type RiverLatencyFlags struct {
	CommonFlags
	Rate              int
	Duration          time.Duration
	Warmup            time.Duration
	Enqueuers         int
	MaxWorkers        int
	FetchCooldown     durList
	FetchPollInterval time.Duration
	PollOnly          bool
	MaxConns          int
}

// riverStamp is the latency job's arguments: like latencyPayload.
type riverStamp struct {
	I int   `json:"i"`
	T int64 `json:"t"`
}

// Kind names the job kind.
func (riverStamp) Kind() string { return "agentbench_stamp" }

// riverStampWorker notes when each job starts.
type riverStampWorker struct {
	river.WorkerDefaults[riverStamp]
	note func(i int, t int64)
}

// Work notes the start.
func (w *riverStampWorker) Work(_ context.Context, j *river.Job[riverStamp]) error {
	w.note(j.Args.I, j.Args.T)
	return nil
}

func runRiverLatency(ctx context.Context, args []string, out, errOut io.Writer) error {
	f := RiverLatencyFlags{FetchCooldown: durList{100 * time.Millisecond, 2 * time.Millisecond}}
	fs := newFlagSet("river-latency",
		"Inserts single River jobs at a steady rate to an idle River client and reports insert→start latency "+
			"percentiles, one run per --fetch-cooldown: the latency command's measurement with River.", errOut)
	f.register(fs)
	fs.IntVar(&f.Rate, "rate", 500, "jobs inserted per second")
	fs.DurationVar(&f.Duration, "duration", 20*time.Second, "how long to insert")
	fs.DurationVar(&f.Warmup, "warmup", time.Second, "leading part of the run left out of the percentiles")
	fs.IntVar(&f.Enqueuers, "enqueuers", 4, "goroutines inserting on the shared schedule (through an insert-only client and pool)")
	fs.IntVar(&f.MaxWorkers, "max-workers", 100, "MaxWorkers of the default queue (as latency's pool concurrency)")
	fs.Var(&f.FetchCooldown, "fetch-cooldown", "comma-separated FetchCooldowns, one run each (100ms is the client's "+
		"default, 2ms River's own benchmark setting); it also spaces the insert notifications")
	fs.DurationVar(&f.FetchPollInterval, "fetch-poll-interval", time.Second, "River's FetchPollInterval (the client's default 1s)")
	fs.BoolVar(&f.PollOnly, "poll-only", false, "River's PollOnly: no LISTEN/NOTIFY")
	fs.IntVar(&f.MaxConns, "max-conns", 8, "connection pool size of the working client")
	if err := parseFlags(fs, args, &f.CommonFlags); err != nil {
		return err
	}
	if f.Rate <= 0 || f.Duration <= 0 || f.Enqueuers <= 0 || f.MaxWorkers <= 0 || f.Warmup < 0 || f.MaxConns <= 0 {
		return errors.New("--rate, --duration, --enqueuers, --max-workers and --max-conns must be positive")
	}
	if f.Warmup >= f.Duration {
		return errors.New("--warmup must be shorter than --duration")
	}
	for _, cd := range f.FetchCooldown {
		if cd < river.FetchCooldownMin {
			return errors.New("--fetch-cooldown values must be at least 1ms")
		}
	}
	if f.FetchPollInterval < river.FetchPollIntervalMin {
		return errors.New("--fetch-poll-interval must be at least 1ms")
	}
	srv, log, err := f.open(ctx, errOut)
	if err != nil {
		return err
	}
	defer srv.Close()
	fmt.Fprintf(out, "# river-latency: %d jobs/s for %s (first %s left out), %d enqueuers; River %s, MaxWorkers %d, FetchPollInterval %s, poll-only %v; %s\n# %s, GOMAXPROCS=%d, %d CPUs\n\n",
		f.Rate, f.Duration, f.Warmup, f.Enqueuers, riverVersion, f.MaxWorkers, f.FetchPollInterval, f.PollOnly,
		srv.Describe(ctx), runtime.Version(), runtime.GOMAXPROCS(0), runtime.NumCPU())

	t := NewTable(append([]string{"mode", "jobs", "started", "dup", "ins/s", "p50 ms", "p90 ms", "p99 ms",
		"p99.9 ms", "max ms", "mean ms", "ins p50 ms", "ins p99 ms", "max lag ms"}, cpuHeader...)...)
	for _, cd := range f.FetchCooldown {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r, err := riverLatencyRun(ctx, srv, f, cd, out, log)
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

// riverLatencyRun measures one fetch cooldown on a fresh database.
func riverLatencyRun(ctx context.Context, srv *Server, f RiverLatencyFlags, cooldown time.Duration, out io.Writer, log *slog.Logger) (LatencyResult, error) {
	mode := "notify"
	if f.PollOnly {
		mode = "poll-only"
	}
	res := LatencyResult{Mode: fmt.Sprintf("%s-cd%s", mode, cooldown)}
	total := int(float64(f.Rate) * f.Duration.Seconds())
	res.Scheduled = total
	ctx, cancel := context.WithTimeout(ctx, f.RunTimeout)
	defer cancel()

	rdb, err := srv.Fresh(ctx)
	if err != nil {
		return res, err
	}
	defer rdb.Close()
	workDB, err := riverDB(ctx, srv, rdb, int32(f.MaxConns))
	if err != nil {
		return res, err
	}
	defer workDB.Close()
	enqDB, err := rdb.Pool(ctx, int32(f.Enqueuers)+1)
	if err != nil {
		return res, err
	}
	defer enqDB.Close()

	rec := newStarts(total)
	workers := river.NewWorkers()
	river.AddWorker(workers, &riverStampWorker{note: func(i int, t int64) { rec.note(i, t) }})
	cfg := func(queues bool) *river.Config {
		c := &river.Config{FetchCooldown: cooldown, FetchPollInterval: f.FetchPollInterval, PollOnly: f.PollOnly,
			Logger: log, Workers: workers}
		if queues {
			c.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: f.MaxWorkers}}
		}
		return c
	}
	client, err := river.NewClient(riverpgxv5.New(workDB), cfg(true))
	if err != nil {
		return res, err
	}
	// Inserts go through an insert-only client on their own pool, as
	// latency's enqueuers do; its FetchCooldown spaces its notifications.
	inserter, err := river.NewClient(riverpgxv5.New(enqDB), cfg(false))
	if err != nil {
		return res, err
	}
	if err := client.Start(context.WithoutCancel(ctx)); err != nil {
		return res, err
	}
	defer func() {
		sctx, c := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer c()
		_ = client.Stop(sctx)
	}()
	if err := openConns(ctx, enqDB, f.Enqueuers); err != nil {
		return res, err
	}
	time.Sleep(500 * time.Millisecond) // let the client elect a leader and listen

	var stats *PGStats
	if f.PGStats {
		if stats, err = StartPGStats(ctx, enqDB); err != nil {
			return res, err
		}
	}
	prof, err := StartProfile(f.CPUProfile, "river-latency-"+res.Mode)
	if err != nil {
		return res, err
	}
	cpu := StartCPU(ctx, enqDB)
	sched := Schedule{Rate: f.Rate, Total: total, Enqueuers: f.Enqueuers}
	sent, err := sched.Run(ctx, rec.since, func(ctx context.Context, i, _ int, at int64) error {
		_, err := inserter.Insert(ctx, riverStamp{I: i, T: at}, nil)
		return err
	})
	if err != nil {
		prof.Stop()
		return res, fmt.Errorf("insert: %w", err)
	}
	res.Achieved, res.MaxLag = sent.Achieved, sent.MaxLag

	wait := 2*max(f.FetchPollInterval, time.Second) + 2*time.Second
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
		return res, fmt.Errorf("only %d of %d jobs started within %s after the last insert", res.Started, total, wait)
	}
	return res, nil
}

// durList is a flag holding comma-separated positive durations.
type durList []time.Duration

func (l *durList) String() string {
	s := make([]string, len(*l))
	for i, v := range *l {
		s[i] = v.String()
	}
	return strings.Join(s, ",")
}

func (l *durList) Set(v string) error {
	var out durList
	for _, f := range strings.Split(v, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(f))
		if err != nil || d <= 0 {
			return fmt.Errorf("%q is not a positive duration", f)
		}
		out = append(out, d)
	}
	*l = out
	return nil
}
