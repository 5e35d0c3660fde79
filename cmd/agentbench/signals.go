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
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger/agentledgertest/downstream"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/daemon"
	"github.com/agentledger/agentledger/waits"
)

// SignalsFlags configure the signals command.
type SignalsFlags struct {
	CommonFlags
	Signals     int
	Waiting     int
	Rate        float64
	Concurrency int
	MaxConns    int
}

// resumeSignal is the signal the signals command's tasks wait for: the
// measured ones with keys order-1, order-2, …, the idle ones beside them
// with keys idle-1, idle-2, … (never sent).
const resumeSignal = "bench.resume"

func runSignals(ctx context.Context, args []string, out, errOut io.Writer) error {
	f := SignalsFlags{}
	fs := newFlagSet("signals",
		"Parks steps tasks at a wait_for_signal step, each with its own correlation key, followed by a keyed POST; "+
			"then sends their signals one by one at --rate a second (waits.Store.Send, as the API does) and measures, "+
			"for each, the time from Send returning to the POST reaching a loopback downstream: the signal's wake-up, "+
			"the claim, the wait's step served its signal and the call. --waiting more tasks wait beside them for the "+
			"same signal name with keys never sent.", errOut)
	f.register(fs)
	fs.IntVar(&f.Signals, "signals", 500, "waiting tasks that are sent their signal, one each")
	fs.IntVar(&f.Waiting, "waiting", 10000, "tasks waiting beside them for signals never sent (inserted as the wait tool leaves them)")
	fs.Float64Var(&f.Rate, "rate", 50, "signals a second")
	fs.IntVar(&f.Concurrency, "concurrency", 50, "the daemon's concurrency")
	fs.IntVar(&f.MaxConns, "max-conns", 0, "the daemon's connection pool size (0: twice the concurrency and 8: "+
		"a wait call holds two connections, its ledger reservation's and its own)")
	if err := parseFlags(fs, args, &f.CommonFlags); err != nil {
		return err
	}
	if f.Signals <= 0 || f.Rate <= 0 || f.Concurrency <= 0 || f.Waiting < 0 || f.MaxConns < 0 {
		return errors.New("--signals, --rate and --concurrency must be positive, --waiting and --max-conns not negative")
	}
	srv, log, err := f.open(ctx, errOut)
	if err != nil {
		return err
	}
	defer srv.Close()
	fmt.Fprintf(out, "# signals: %d steps tasks waiting for a signal then making one keyed POST, beside %d waiting for signals never sent; "+
		"signals at %.0f/s; daemon concurrency %d; %s\n# %s, GOMAXPROCS=%d, %d CPUs\n\n",
		f.Signals, f.Waiting, f.Rate, f.Concurrency, srv.Describe(ctx), runtime.Version(), runtime.GOMAXPROCS(0), runtime.NumCPU())

	ctx, cancel := context.WithTimeout(ctx, f.RunTimeout)
	defer cancel()
	rdb, err := srv.Fresh(ctx)
	if err != nil {
		return err
	}
	defer rdb.Close()
	db, err := rdb.Pool(ctx, 4)
	if err != nil {
		return err
	}
	defer db.Close()
	var idle int64
	if f.Waiting > 0 {
		if idle, err = insertWaits(ctx, db, f.Waiting, waitingSignal, resumeSignal); err != nil {
			return err
		}
	}
	if err := rdb.Settle(ctx, db, "tasks", "task_attempts", "waits"); err != nil {
		return err
	}

	down := downstream.New()
	defer down.Close()
	arrivals := newArrivals(f.Signals)
	down.SetAfter(func(_, _ string, body []byte) { arrivals.note(body) })
	stop, err := startDaemon(ctx, rdb, down, f.Concurrency, f.MaxConns, 0, log)
	if err != nil {
		return err
	}
	defer stop()

	store := claims.New(db)
	batch := make([]claims.EnqueueParams, f.Signals)
	for i := range batch {
		batch[i] = claims.EnqueueParams{Kind: "steps", Payload: json.RawMessage(fmt.Sprintf(`{"steps":[`+
			`{"tool":"wait_for_signal","args":{"signal":%q,"key":"order-%d","timeout":"1h"}},`+
			`{"tool":"http_request","args":{"method":"POST","url":%q,"body":{"n":%d}}}]}`, resumeSignal, i, down.URL+"/charges", i))}
	}
	enq, err := store.EnqueueBatch(ctx, batch)
	if err != nil {
		return err
	}
	parkedAt := time.Now()
	if err := awaitParked(ctx, db, idle, f.Signals); err != nil {
		return err
	}
	fmt.Fprintf(errOut, "signals: %d tasks parked in %.1fs\n", f.Signals, time.Since(parkedAt).Seconds())

	ws := waits.NewStore(db)
	returned := make([]time.Time, f.Signals)
	sends := make([]time.Duration, f.Signals)
	watch, err := watchPhase(ctx, f.CommonFlags, db, "signals")
	if err != nil {
		return err
	}
	cpu := StartCPU(ctx, db)
	tick := time.NewTicker(time.Duration(float64(time.Second) / f.Rate))
	defer tick.Stop()
	for i := range f.Signals {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("%d of %d signals sent: %w", i, f.Signals, ctx.Err())
		}
		start := time.Now()
		sent, err := ws.Send(ctx, waits.SignalParams{Name: resumeSignal, Key: fmt.Sprintf("order-%d", i),
			Payload: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)), SentBy: "bench"})
		returned[i] = time.Now()
		sends[i] = returned[i].Sub(start)
		if err != nil {
			return err
		}
		if sent.Woke == nil || sent.Woke.TaskID != enq[i].Task.ID {
			return fmt.Errorf("signal %d (key order-%d) woke %+v, not task %d", sent.Signal.ID, i, sent.Woke, enq[i].Task.ID)
		}
	}
	select {
	case <-arrivals.all:
	case <-time.After(time.Minute):
	case <-ctx.Done():
	}
	use := cpu.Stop(ctx)
	watch.stop(ctx, out, "signals", f.Signals)
	lats := arrivals.since(returned)
	if len(lats) < f.Signals {
		return fmt.Errorf("%d of %d signalled tasks made their POST within a minute of the last signal", len(lats), f.Signals)
	}
	if down.Effects() != int64(f.Signals) {
		return fmt.Errorf("%d effects for %d signalled tasks", down.Effects(), f.Signals)
	}
	p, s := Summarise(lats), Summarise(sends)
	t := NewTable(append([]string{"signals", "waiting", "effects", "p50 ms", "p90 ms", "p99 ms", "max ms", "mean ms",
		"send p50 ms", "send p99 ms"}, cpuHeader...)...)
	t.Add(append([]any{f.Signals, f.Waiting + f.Signals, down.Effects(), ms(p.P50), ms(p.P90), ms(p.P99), ms(p.Max), ms(p.Mean),
		ms(s.P50), ms(s.P99)}, use.cells(f.Signals)...)...)
	t.Print(out)
	fmt.Fprintf(errOut, "signals: p50 %s ms, p99 %s ms\n", ms(p.P50), ms(p.P99))
	return nil
}

// arrivals records when each numbered POST ({"n": i}) reached the
// downstream.
type arrivals struct {
	mu   sync.Mutex
	at   []time.Time
	n    int
	all  chan struct{} // closed when every one arrived
	once sync.Once
}

func newArrivals(total int) *arrivals {
	return &arrivals{at: make([]time.Time, total), all: make(chan struct{})}
}

// note records the arrival of body, the first of each number only.
func (a *arrivals) note(body []byte) {
	now := time.Now()
	var b struct {
		N *int `json:"n"`
	}
	if json.Unmarshal(body, &b) != nil || b.N == nil || *b.N < 0 || *b.N >= len(a.at) {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.at[*b.N].IsZero() {
		return
	}
	a.at[*b.N] = now
	if a.n++; a.n == len(a.at) {
		a.once.Do(func() { close(a.all) })
	}
}

// since returns, for each POST that arrived, the time from from[i] to its
// arrival.
func (a *arrivals) since(from []time.Time) []time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []time.Duration
	for i, at := range a.at {
		if !at.IsZero() {
			out = append(out, at.Sub(from[i]))
		}
	}
	return out
}

// startDaemon runs an embedded daemon on the run's database — the built-in
// kinds and tools, the downstream allowed (if any), no cron, janitor or
// dispatcher — and returns once it is ready, with the function that stops
// it. maxConns 0 is twice the concurrency and 8: a wait call holds its
// ledger reservation's connection while it takes another for the wait, so
// a pool smaller than that starves when every slot waits at once.
// pollInterval 0 is the daemon's default.
func startDaemon(ctx context.Context, rdb *RunDB, down *downstream.Server, concurrency, maxConns int, pollInterval time.Duration,
	log *slog.Logger) (stop func(), err error) {
	if maxConns == 0 {
		maxConns = 2*concurrency + 8
	}
	url, err := rdb.URL()
	if err != nil {
		return nil, err
	}
	cfg := daemon.Config{
		Database:    daemon.Database{URL: url, NoMigrate: true, MaxConns: int32(maxConns)},
		Worker:      daemon.Worker{ID: "bench", Concurrency: concurrency, PollInterval: pollInterval},
		Maintenance: daemon.Maintenance{NoCron: true, NoJanitor: true},
		Notify:      daemon.Notifications{NoDispatch: true},
		Logger:      log,
		Stdout:      io.Discard,
	}
	if down != nil {
		cfg.HTTPTools = daemon.HTTPTools{AllowedHosts: []string{down.URL}}
	}
	d, err := newDaemon(cfg, DaemonSpec{})
	if err != nil {
		return nil, err
	}
	dctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- d.Run(dctx) }()
	select {
	case <-d.Ready():
		return func() { cancel(); <-done }, nil
	case err := <-done:
		cancel()
		return nil, fmt.Errorf("the daemon stopped: %w", err)
	}
}

// awaitParked returns once n tasks above id after are waiting, polling
// (nothing signals a park to the benchmark); a task that ended instead
// fails it.
func awaitParked(ctx context.Context, db *pgxpool.Pool, after int64, n int) error {
	for {
		var parked, ended int
		var why string
		if err := db.QueryRow(ctx, `SELECT count(*) FILTER (WHERE state = 'waiting'),
			count(*) FILTER (WHERE state IN ('succeeded', 'dead', 'cancelled', 'needs_attention')),
			coalesce(min(last_error) FILTER (WHERE state <> 'waiting'), '')
			FROM tasks WHERE id > $1`, after).Scan(&parked, &ended, &why); err != nil {
			return err
		}
		switch {
		case ended > 0:
			return fmt.Errorf("%d tasks ended instead of waiting (%s)", ended, why)
		case parked >= n:
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d tasks parked: %w", parked, n, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// phaseWatch is what --pg-stats and --cpuprofile watch of one measured
// phase of a command that has a single one.
type phaseWatch struct {
	stats *PGStats
	prof  *Profile
}

// watchPhase starts what flags ask for of the phase label, before its
// CPU meter.
func watchPhase(ctx context.Context, flags CommonFlags, db *pgxpool.Pool, label string) (*phaseWatch, error) {
	w := &phaseWatch{}
	var err error
	if flags.PGStats {
		if w.stats, err = StartPGStats(ctx, db); err != nil {
			return nil, err
		}
	}
	if w.prof, err = StartProfile(flags.CPUProfile, label); err != nil {
		return nil, err
	}
	return w, nil
}

// stop ends the phase's profile and, with --pg-stats, writes its
// statements per unit of n to out.
func (w *phaseWatch) stop(ctx context.Context, out io.Writer, label string, n int) {
	w.prof.Stop()
	if w.stats != nil {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		fmt.Fprintf(out, "%s:\n", label)
		w.stats.Stop(sctx, out, n)
	}
}
