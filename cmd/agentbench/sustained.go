package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/daemon"
	"github.com/agentledger/agentledger/metrics"
	"github.com/agentledger/agentledger/schedule"
	"github.com/agentledger/agentledger/tools"
	"github.com/agentledger/agentledger/worker"
)

// SustainedFlags configure the sustained command.
type SustainedFlags struct {
	CommonFlags
	Rate            int
	Duration        time.Duration
	Window          time.Duration
	Enqueuers       int
	EnqueueBatch    int
	Concurrency     int
	Batch           int
	MaxConns        int
	Retention       time.Duration
	JanitorInterval time.Duration
	Cron            string
	CSV             string
	Chart           string
}

// SustainedWindow is what one window of a sustained run saw. Tasks belong
// to the window in which their handler started.
type SustainedWindow struct {
	Start    time.Duration // since the run's start
	Len      time.Duration // the last window runs on until the last task started
	Enqueued int64         // Enqueue calls that returned in the window
	Started  int           // tasks whose handler first started in the window
	Rate     float64       // Started per second
	Lat      Percentiles   // enqueue → start of those tasks
	Backlog  int64         // sent (Enqueue called) but not yet started at the window's end
	Cron     int64         // tasks the scheduler fired
	Deleted  int64         // finished tasks the janitor deleted
	CPU      CPUUse
}

// SustainedResult is the outcome of a sustained run.
type SustainedResult struct {
	Windows    []SustainedWindow
	Scheduled  int // tasks due by --duration
	Enqueued   int64
	Started    int
	Duplicates int64
	Achieved   float64 // tasks/s actually enqueued, until sending stopped
	MaxLag     time.Duration
	All        Percentiles // enqueue → start of every task
	Cron       int64
	Deleted    int64
	PeakRSS    int64
}

// sustainedHeader names the columns of the per-window table.
var sustainedHeader = append([]string{"start s", "secs", "enq/s", "started", "tasks/s", "p50 ms", "p99 ms",
	"max ms", "backlog", "cron", "deleted"}, cpuHeader...)

func runSustained(ctx context.Context, args []string, out, errOut io.Writer) error {
	var f SustainedFlags
	fs := newFlagSet("sustained",
		"Enqueues no-op tasks at a steady rate for a long time to a worker pool, with the retention janitor and "+
			"the cron scheduler running beside it, and reports throughput and enqueue→start latency per window.", errOut)
	f.register(fs)
	fs.IntVar(&f.Rate, "rate", 2000, "tasks enqueued per second (open loop)")
	fs.DurationVar(&f.Duration, "duration", 10*time.Minute, "how long to enqueue")
	fs.DurationVar(&f.Window, "window", 30*time.Second, "length of a reported window")
	fs.IntVar(&f.Enqueuers, "enqueuers", 8, "goroutines (and connections) enqueueing on the shared schedule")
	fs.IntVar(&f.EnqueueBatch, "enqueue-batch", 1,
		"tasks per enqueue call (1: Enqueue; more: EnqueueBatch, one statement and one commit, sent when its last task is due)")
	fs.IntVar(&f.Concurrency, "concurrency", 100, "worker pool concurrency (agentd's default)")
	fs.IntVar(&f.Batch, "batch", 100, "claim batch size (agentd's default)")
	fs.IntVar(&f.MaxConns, "max-conns", 20, "connection pool size of the worker pool, shared with the janitor and the scheduler (agentd's default)")
	fs.DurationVar(&f.Retention, "retention", time.Minute,
		"the janitor's retention window of every sweep: finished tasks older than this are deleted during the run")
	fs.DurationVar(&f.JanitorInterval, "janitor-interval", 30*time.Second, "time between janitor runs (the first after a tenth of it)")
	fs.StringVar(&f.Cron, "cron", "@every 1s", "spec of the one cron schedule, which enqueues a no-op task per slot")
	fs.StringVar(&f.CSV, "csv", "", "write the windows as CSV to this file")
	fs.StringVar(&f.Chart, "chart", "", "draw throughput and p50/p99 latency per window to this file (.png or .svg)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %v", fs.Args())
	}
	if !flagSet(fs, "run-timeout") {
		f.RunTimeout = f.Duration + 2*time.Minute
	}
	if err := f.check(); err != nil {
		return err
	}
	if f.Rate <= 0 || f.Duration <= 0 || f.Window <= 0 || f.Enqueuers <= 0 || f.EnqueueBatch <= 0 || f.Concurrency <= 0 || f.Batch < 0 ||
		f.MaxConns <= 0 || f.Retention <= 0 || f.JanitorInterval <= 0 {
		return errors.New("--rate, --duration, --window, --enqueuers, --enqueue-batch, --concurrency, --max-conns, --retention and --janitor-interval must be positive")
	}
	if f.Window > f.Duration {
		return errors.New("--window must not be longer than --duration")
	}
	if f.RunTimeout <= f.Duration {
		return errors.New("--run-timeout must be longer than --duration")
	}
	if err := (&schedule.Schedule{Name: "check", Spec: f.Cron, Kind: "noop"}).Validate(); err != nil {
		return fmt.Errorf("--cron: %w", err)
	}
	if f.Chart != "" {
		if err := checkChartFormat(f.Chart); err != nil {
			return fmt.Errorf("--chart: %w", err)
		}
	}
	log, err := f.logger(errOut)
	if err != nil {
		return err
	}
	var csvOut *csvSeries
	if f.CSV != "" {
		if csvOut, err = newCSVSeries(f.CSV); err != nil {
			return fmt.Errorf("--csv: %w", err)
		}
		defer csvOut.Close()
	}

	srv, err := openServer(ctx, f.CommonFlags)
	if err != nil {
		return err
	}
	defer srv.Close()
	fmt.Fprintf(out, "# sustained: %d tasks/s for %s in windows of %s, %d enqueuers sending %d per call; one pool of concurrency %d, batch %d, "+
		"%d connections; janitor every %s, retention %s; cron %q; %s\n# %s, GOMAXPROCS=%d, %d CPUs\n",
		f.Rate, f.Duration, f.Window, f.Enqueuers, f.EnqueueBatch, f.Concurrency, f.Batch, f.MaxConns, f.JanitorInterval, f.Retention,
		f.Cron, srv.Describe(ctx), runtime.Version(), runtime.GOMAXPROCS(0), runtime.NumCPU())
	fmt.Fprintf(out, "# a task counts in the window its handler started in; go = this process (enqueuers, workers, "+
		"janitor, scheduler); deleted: finished tasks the janitor deleted\n\n")

	live := newLiveTable(out, sustainedHeader...)
	r, runErr := sustainedRun(ctx, srv, f, log, out, func(w SustainedWindow) error {
		live.Row(w.cells()...)
		if csvOut != nil {
			return csvOut.Write(w)
		}
		return nil
	})
	if len(r.Windows) > 0 {
		fmt.Fprintln(out)
		sustainedSummary(r).Print(out)
		fmt.Fprintf(out, "\n# total: %d scheduled, %d enqueued (%.0f/s, max lag %s ms), %d started, %d duplicates; "+
			"enqueue→start p50 %s ms, p99 %s ms, max %s ms; cron fired %d tasks; janitor deleted %d tasks; rss %s MB\n",
			r.Scheduled, r.Enqueued, r.Achieved, ms(r.MaxLag), r.Started, r.Duplicates, ms(r.All.P50), ms(r.All.P99),
			ms(r.All.Max), r.Cron, r.Deleted, mb(r.PeakRSS))
		if behind := int64(r.Scheduled) - r.Enqueued; behind > 0 {
			fmt.Fprintf(out, "# the producers fell behind the schedule: %d of the %d tasks due (%.1f%%) were not sent by %s after the start\n",
				behind, r.Scheduled, 100*float64(behind)/float64(r.Scheduled), f.Duration+sendGrace)
		}
	}
	if csvOut != nil {
		if err := csvOut.Close(); err != nil && runErr == nil {
			runErr = fmt.Errorf("--csv: %w", err)
		}
	}
	if f.Chart != "" && len(r.Windows) > 0 {
		if err := sustainedChart(f.Chart, f, r.Windows); err != nil && runErr == nil {
			runErr = fmt.Errorf("--chart: %w", err)
		}
	}
	return runErr
}

// sustainedRun runs the workers, the janitor and the scheduler on a fresh
// database while the schedule enqueues, and reports each window to report
// as it ends.
func sustainedRun(ctx context.Context, srv *Server, f SustainedFlags, log *slog.Logger, out io.Writer,
	report func(SustainedWindow) error) (SustainedResult, error) {
	total := int(float64(f.Rate) * f.Duration.Seconds())
	res := SustainedResult{Scheduled: total}
	ctx, cancel := context.WithTimeout(ctx, f.RunTimeout)
	defer cancel()

	rdb, ctl, err := srv.FreshControl(ctx)
	if err != nil {
		return res, err
	}
	defer rdb.Close()
	defer ctl.Close()
	enqDB, err := rdb.Pool(ctx, int32(f.Enqueuers)+1)
	if err != nil {
		return res, err
	}
	defer enqDB.Close()

	nWindows := int((f.Duration + f.Window - 1) / f.Window)
	rec := newStarts(total)
	wins := &windowLats{width: int64(f.Window), n: nWindows}
	rec.onStart = wins.add
	stamp := worker.HandlerFunc(func(ctx context.Context, t *agentledger.Task) (json.RawMessage, error) {
		var p latencyPayload
		if err := json.Unmarshal(t.Payload, &p); err != nil || !rec.note(p.I, p.T) {
			return nil, agentledger.Permanent(fmt.Errorf("bad payload %s", t.Payload))
		}
		return tools.Noop(ctx, t)
	})
	// The daemon runs its scheduler and janitor, as agentd does; their
	// metrics count the fires and deletions.
	m := metrics.New()
	w, err := NewPoolWorkers(ctx, rdb, PoolSpec{Pools: 1, Concurrency: f.Concurrency, Batch: f.Batch,
		MaxConns: int32(f.MaxConns), Tasks: total, Log: log,
		Daemon: DaemonSpec{Kinds: map[string]worker.Handler{"stamp": stamp}, Configure: func(c *daemon.Config) {
			c.Maintenance.NoCron, c.Maintenance.NoJanitor, c.Hooks.Metrics, c.Maintenance.JanitorInterval = false, false, m, f.JanitorInterval
			c.Maintenance.Retain = daemon.Retention{Ledger: f.Retention, Tasks: f.Retention, Outbox: f.Retention,
				Inbox: f.Retention, IdempotencyKeys: f.Retention}
		}}})
	if err != nil {
		return res, err
	}
	fires := func() int64 { return counterTotal(m, "agentledger_cron_fires_total", "") }
	deleted := func() int64 { return counterTotal(m, "agentledger_janitor_deleted_total", "tasks") }
	if _, err := schedule.NewStore(ctl).Add(ctx, schedule.Schedule{Name: "agentbench-tick", Spec: f.Cron, Kind: "noop"}); err != nil {
		_, _ = w.Stop()
		return res, err
	}
	if err := w.Start(ctx); err != nil {
		_, _ = w.Stop()
		return res, err
	}
	stopped := false
	stopAll := func() {
		if !stopped {
			stopped = true
			res.PeakRSS, _ = w.Stop()
		}
	}
	defer stopAll()

	store := claims.New(enqDB)
	if err := openConns(ctx, enqDB, f.Enqueuers); err != nil {
		return res, err
	}
	time.Sleep(200 * time.Millisecond) // the pool connects and listens

	var stats *PGStats
	if f.PGStats {
		if stats, err = StartPGStats(ctx, ctl); err != nil {
			return res, err
		}
	}
	prof, err := StartProfile(f.CPUProfile, "sustained")
	if err != nil {
		return res, err
	}
	defer prof.Stop()

	// The schedule runs in the background; this goroutine closes each
	// window as it ends, the last when every task started (or no more do).
	cpu := StartCPU(ctx, ctl)
	origin := rec.since()
	wins.start(origin)
	var calls, enqueued atomic.Int64 // Enqueue calls made, and returned
	finished := make(chan struct{})
	var (
		sent    Sent
		sendErr error
		sentFor time.Duration // from the start until the producers stopped
		endAt   int64         // rec.since() when the run's tasks had started
	)
	go func() {
		defer close(finished)
		// The producers stop sending at the end of the run, the tasks still
		// due then (if they fell behind) unsent: the run lasts --duration.
		sendCtx, stopSending := context.WithDeadline(ctx, rec.base.Add(time.Duration(origin)+f.Duration+sendGrace))
		defer stopSending()
		sched := Schedule{Rate: f.Rate, Total: total, Enqueuers: f.Enqueuers, Batch: f.EnqueueBatch}
		sent, sendErr = sched.Run(sendCtx, rec.since, func(_ context.Context, first, n int, at int64) error {
			batch := make([]claims.EnqueueParams, n)
			for j := range batch {
				payload, _ := json.Marshal(latencyPayload{I: first + j, T: at})
				batch[j] = claims.EnqueueParams{Kind: "stamp", Payload: payload}
			}
			calls.Add(int64(n)) // a task may start before its Enqueue returns
			if n == 1 {
				if _, err := store.Enqueue(ctx, batch[0]); err != nil {
					return err
				}
			} else if _, err := store.EnqueueBatch(ctx, batch); err != nil {
				return err
			}
			enqueued.Add(int64(n))
			return nil
		})
		sentFor = time.Duration(rec.since() - origin)
		if sendErr == nil {
			waitStarted(ctx, rec, enqueued.Load(), 5*time.Second)
		}
		endAt = rec.since()
	}()
	defer func() { cancel(); <-finished }()                                   // on an early return
	stoppedEarly := func() bool { return sendErr != nil || ctx.Err() != nil } // once finished is closed

	var prevEnq, prevFires, prevDeleted int64
	for k := range nWindows {
		winStart := origin + int64(k)*int64(f.Window)
		winEnd := winStart + int64(f.Window)
		early := false
		if k == nWindows-1 {
			<-finished
			early = stoppedEarly()
			winEnd = max(endAt, origin+int64(f.Duration)) // on until the last task started
		} else {
			grace := int64(10 * time.Millisecond) // a start noted at the boundary is in its bucket by then
			timer := time.NewTimer(time.Duration(winEnd + grace - rec.since()))
			select {
			case <-timer.C:
				early = ctx.Err() != nil
			case <-finished:
				if early = stoppedEarly(); !early {
					<-timer.C // finished before the window's end: the window is still whole
				}
			}
		}
		if early {
			break // the error is reported below
		}
		lats := wins.take(k)
		enq, fi, de := enqueued.Load(), fires(), deleted()
		win := SustainedWindow{
			Start: time.Duration(winStart - origin), Len: time.Duration(winEnd - winStart),
			Enqueued: enq - prevEnq, Started: len(lats), Lat: Summarise(lats),
			Backlog: calls.Load() - rec.started.Load(), Cron: fi - prevFires, Deleted: de - prevDeleted,
			CPU: cpu.Lap(ctx),
		}
		win.Rate = float64(win.Started) / win.Len.Seconds()
		prevEnq, prevFires, prevDeleted = enq, fi, de
		res.Windows = append(res.Windows, win)
		if err := report(win); err != nil {
			return res, err
		}
	}
	<-finished
	stopAll()
	res.Cron, res.Deleted = fires(), deleted()
	res.MaxLag, res.Enqueued = sent.MaxLag, enqueued.Load()
	res.Achieved = float64(res.Enqueued) / sentFor.Seconds()
	var lr LatencyResult
	rec.fill(&lr, sent, 0)
	res.Started, res.Duplicates, res.All = lr.Started, lr.Duplicates, lr.Start
	if stats != nil {
		sctx, c := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		stats.Stop(sctx, out, total)
		c()
	}
	switch {
	case sendErr != nil:
		return res, fmt.Errorf("producers: %w", sendErr)
	case ctx.Err() != nil:
		return res, ctx.Err()
	case int64(res.Started) < res.Enqueued:
		return res, fmt.Errorf("only %d of %d enqueued tasks started", res.Started, res.Enqueued)
	}
	return res, nil
}

// sendGrace is how long after --duration the producers may still send
// tasks that were due before it.
const sendGrace = time.Second

// waitStarted waits until n tasks of rec started, or none started for idle.
func waitStarted(ctx context.Context, rec *starts, n int64, idle time.Duration) {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	last, lastAt := rec.started.Load(), time.Now()
	for last < n && time.Since(lastAt) < idle {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if now := rec.started.Load(); now != last {
			last, lastAt = now, time.Now()
		}
	}
}

// windowLats collects enqueue → start latencies by the window the task
// started in; starts after the last window count in the last.
type windowLats struct {
	width int64 // ns
	n     int

	mu     sync.Mutex
	origin int64
	lats   [][]time.Duration
}

// start sets the start of the first window (on the starts clock).
func (w *windowLats) start(origin int64) {
	w.mu.Lock()
	w.origin = origin
	w.mu.Unlock()
}

// add is a starts.onStart: a task started at now after lat.
func (w *windowLats) add(now, lat int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	i := min(max(int((now-w.origin)/w.width), 0), w.n-1)
	for len(w.lats) <= i {
		w.lats = append(w.lats, nil)
	}
	w.lats[i] = append(w.lats[i], time.Duration(lat))
}

// take returns window i's latencies and forgets them.
func (w *windowLats) take(i int) []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	if i >= len(w.lats) {
		return nil
	}
	l := w.lats[i]
	w.lats[i] = nil
	return l
}

// cells formats the window as a row of the table.
func (w SustainedWindow) cells() []any {
	row := []any{fmt.Sprintf("%.0f", w.Start.Seconds()), fmt.Sprintf("%.1f", w.Len.Seconds()),
		fmt.Sprintf("%.0f", float64(w.Enqueued)/w.Len.Seconds()), w.Started, fmt.Sprintf("%.0f", w.Rate),
		ms(w.Lat.P50), ms(w.Lat.P99), ms(w.Lat.Max), w.Backlog, w.Cron, w.Deleted}
	return append(row, w.CPU.cells(w.Started)...)
}

// sustainedSummary compares the first and the last window and gives the
// least and the most of each figure across the windows, and the whole run.
func sustainedSummary(r SustainedResult) *Table {
	t := NewTable("windows", "tasks/s", "p50 ms", "p99 ms")
	ws := r.Windows
	first, last := ws[0], ws[len(ws)-1]
	t.Add(fmt.Sprintf("first (%.0fs)", first.Start.Seconds()), fmt.Sprintf("%.0f", first.Rate), ms(first.Lat.P50), ms(first.Lat.P99))
	t.Add(fmt.Sprintf("last (%.0fs)", last.Start.Seconds()), fmt.Sprintf("%.0f", last.Rate), ms(last.Lat.P50), ms(last.Lat.P99))
	lo, hi := first, first
	for _, w := range ws[1:] {
		lo.Rate, hi.Rate = min(lo.Rate, w.Rate), max(hi.Rate, w.Rate)
		lo.Lat.P50, hi.Lat.P50 = min(lo.Lat.P50, w.Lat.P50), max(hi.Lat.P50, w.Lat.P50)
		lo.Lat.P99, hi.Lat.P99 = min(lo.Lat.P99, w.Lat.P99), max(hi.Lat.P99, w.Lat.P99)
	}
	t.Add("min", fmt.Sprintf("%.0f", lo.Rate), ms(lo.Lat.P50), ms(lo.Lat.P99))
	t.Add("max", fmt.Sprintf("%.0f", hi.Rate), ms(hi.Lat.P50), ms(hi.Lat.P99))
	var secs float64
	for _, w := range ws {
		secs += w.Len.Seconds()
	}
	t.Add("all", fmt.Sprintf("%.0f", float64(r.Started)/secs), ms(r.All.P50), ms(r.All.P99))
	return t
}

// liveTable prints a table a row at a time, in columns as wide as their
// headers (at least 7), for progress on long runs.
type liveTable struct {
	w      io.Writer
	widths []int
}

func newLiveTable(w io.Writer, header ...string) *liveTable {
	t := &liveTable{w: w}
	dashes := make([]any, len(header))
	cells := make([]any, len(header))
	for i, h := range header {
		t.widths = append(t.widths, max(len(h), 7))
		dashes[i], cells[i] = strings.Repeat("-", len(h)), h
	}
	t.Row(cells...)
	t.Row(dashes...)
	return t
}

// Row prints one row, right-aligned.
func (t *liveTable) Row(cells ...any) {
	var b strings.Builder
	for i, c := range cells {
		s := fmt.Sprint(c)
		if i < len(t.widths) {
			s = strings.Repeat(" ", max(t.widths[i]-len([]rune(s)), 0)) + s
		}
		b.WriteString("  " + s)
	}
	fmt.Fprintln(t.w, b.String())
}

// csvSeries writes windows to a CSV file as they end.
type csvSeries struct {
	f      *os.File
	w      *csv.Writer
	closed bool
}

func newCSVSeries(path string) (*csvSeries, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	s := &csvSeries{f: f, w: csv.NewWriter(f)}
	_ = s.w.Write([]string{"window_start_s", "window_s", "enqueued", "started", "tasks_per_s", "p50_ms", "p99_ms",
		"max_ms", "backlog", "cron_fired", "janitor_deleted", "go_cores", "pg_cores", "others_cores",
		"go_us_per_task", "pg_us_per_task"})
	s.w.Flush()
	return s, s.w.Error()
}

// Write appends one window and flushes it.
func (s *csvSeries) Write(w SustainedWindow) error {
	num := func(v float64, prec int) string { return strconv.FormatFloat(v, 'f', prec, 64) }
	row := []string{num(w.Start.Seconds(), 3), num(w.Len.Seconds(), 3), strconv.FormatInt(w.Enqueued, 10),
		strconv.Itoa(w.Started), num(w.Rate, 1), ms(w.Lat.P50), ms(w.Lat.P99), ms(w.Lat.Max),
		strconv.FormatInt(w.Backlog, 10), strconv.FormatInt(w.Cron, 10), strconv.FormatInt(w.Deleted, 10)}
	for _, c := range w.CPU.cells(w.Started) {
		s := fmt.Sprint(c)
		if s == "?" {
			s = "" // unknown
		}
		row = append(row, s)
	}
	_ = s.w.Write(row)
	s.w.Flush()
	return s.w.Error()
}

// Close closes the file; it may be called more than once.
func (s *csvSeries) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	return s.f.Close()
}
