package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger/agentledgertest/downstream"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/daemon"
	"github.com/agentledger/agentledger/flow"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/operator"
	"github.com/agentledger/agentledger/registry"
	"github.com/agentledger/agentledger/tools"
)

// EffectsFlags configure the effects command.
type EffectsFlags struct {
	CommonFlags
	Tasks       int
	InsertBatch int
	Effects     intList
	Concurrency int
	Batch       int
	MaxConns    int
	Replay      bool
	Repeat      int
	Tool        string
	// LimitRate, when set, puts a fleet-wide limit (package flow) on the
	// downstream's origin, so that every performed call books it.
	LimitRate  string
	LimitBurst int
	Tracing    string // off, on or both
}

// EffectsResult is one phase of an effects run.
type EffectsResult struct {
	Effects   int    // per task
	Phase     string // "first" or "replay"
	Tracing   bool
	Burn      ThroughputResult
	Hits      int64 // requests the downstream received in the phase
	Performed int64 // ledger.Do outcomes in the phase
	Served    int64
	Other     int64 // any other outcome (a transient error, a lost lease)
	Tx        TxDelta
	// Bookings are the rows written to flow_state in the phase (-1 without
	// --limit-rate); Take the quantiles of the charge tool's limit checks
	// (p50, p99; none unless --tool custom with --limit-rate).
	Bookings int64
	Take     []time.Duration
}

func runEffects(ctx context.Context, args []string, out, errOut io.Writer) error {
	f := EffectsFlags{Effects: intList{1, 3}}
	fs := newFlagSet("effects",
		"Burns down steps tasks whose steps are keyed http_request POSTs to a loopback counting server (honouring "+
			"Idempotency-Key) with the real steps handler, tools and ledger; reports tasks/s, effects/s and "+
			"transactions per effect. --replay then replays every task: every effect is served by the ledger.", errOut)
	f.register(fs)
	fs.IntVar(&f.Tasks, "tasks", 5000, "steps tasks inserted before each run")
	fs.IntVar(&f.InsertBatch, "insert-batch", 1000, "tasks per EnqueueBatch call when inserting")
	fs.Var(&f.Effects, "effects", "comma-separated numbers of keyed effects (steps) per task to sweep")
	fs.IntVar(&f.Concurrency, "concurrency", 100, "worker pool concurrency (agentd's default)")
	fs.IntVar(&f.Batch, "batch", 100, "claim batch size (agentd's default)")
	fs.IntVar(&f.MaxConns, "max-conns", 20, "connection pool size of the worker pool, shared with the ledger (agentd's default)")
	fs.BoolVar(&f.Replay, "replay", false, "then replay every task (operator.Service.Replay) and burn down again")
	fs.IntVar(&f.Repeat, "repeat", 1, "run the whole sweep this many times")
	fs.StringVar(&f.Tool, "tool", "builtin", "the steps' tool: builtin (http_request), custom (the same keyed POST declared with tools.Define) "+
		"or unsafe (unsafe_http: no key, its reservation durable before the call)")
	fs.StringVar(&f.LimitRate, "limit-rate", "", "a fleet-wide rate limit on the downstream's origin (e.g. 1000000/s): every http_request call books it "+
		"(and with --tool custom every charge call, timed: take p50/p99); empty: no limit")
	fs.IntVar(&f.LimitBurst, "limit-burst", 1000, "the burst of --limit-rate")
	fs.StringVar(&f.Tracing, "tracing", "off", "OpenTelemetry tracing of the run (insert included): off, on (spans exported over "+
		"OTLP/HTTP to a local sink, as agentd with OTEL_EXPORTER_OTLP_ENDPOINT set), or both (each run off, then on)")
	if err := parseFlags(fs, args, &f.CommonFlags); err != nil {
		return err
	}
	modes, err := tracingModes(f.Tracing)
	if err != nil {
		return err
	}
	if f.Tool != "builtin" && f.Tool != "custom" && f.Tool != "unsafe" {
		return fmt.Errorf("--tool %q: give builtin, custom or unsafe", f.Tool)
	}
	if f.Tasks <= 0 || f.InsertBatch <= 0 || f.Concurrency <= 0 || f.Batch <= 0 || f.MaxConns <= 0 || f.Repeat <= 0 {
		return errors.New("--tasks, --insert-batch, --concurrency, --batch, --max-conns and --repeat must be positive")
	}
	srv, log, err := f.open(ctx, errOut)
	if err != nil {
		return err
	}
	defer srv.Close()
	fmt.Fprintf(out, "# effects: %d steps tasks per run, keyed http_request POSTs to a loopback counting server in this process; "+
		"pool concurrency %d, batch %d, %d connections; %s\n# %s, GOMAXPROCS=%d, %d CPUs\n",
		f.Tasks, f.Concurrency, f.Batch, f.MaxConns, srv.Describe(ctx), runtime.Version(), runtime.GOMAXPROCS(0), runtime.NumCPU())
	fmt.Fprintf(out, "# hits: requests the downstream received; performed/served: ledger.Do outcomes; xacts: committed "+
		"transactions (reads included, pg_stat_database); writes: transactions that wrote (transaction ids); "+
		"writes/effect leaves out the claim and complete statements\n\n")

	t := NewTable(tracingColumn(f.Tracing, 2, append(append([]string{"effects", "phase", "tasks", "secs", "tasks/s", "effects/s", "hits",
		"performed", "served", "claims", "completes", "xacts/task", "writes/task", "writes/effect"}, cpuHeader...),
		"rss MB", "conns", "bookings", "take p50 µs", "take p99 µs"))...)
	for range f.Repeat {
		for _, n := range f.Effects {
			for _, traced := range modes {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				rs, err := effectsTraced(ctx, srv, f, n, traced, log, out, errOut)
				for _, r := range rs {
					t.Add(tracingCell(f.Tracing, 2, r.Tracing, r.cells(f.Tasks))...)
					fmt.Fprintf(errOut, "effects=%d %s tracing=%v: %.0f tasks/s, %.0f effects/s\n", n, r.Phase, traced,
						r.Burn.Rate, r.Burn.Rate*float64(n))
				}
				if err != nil {
					t.Print(out)
					return fmt.Errorf("run with %d effects: %w", n, err)
				}
			}
		}
	}
	t.Print(out)
	return nil
}

// cells formats the result as a row of the effects table.
func (r EffectsResult) cells(tasks int) []any {
	b := r.Burn
	rate := fmt.Sprintf("%.0f", b.Rate)
	if b.TimedOut {
		rate = "timeout"
	}
	effects := float64(tasks * r.Effects)
	row := []any{r.Effects, r.Phase, tasks, fmt.Sprintf("%.2f", b.Elapsed.Seconds()), rate,
		fmt.Sprintf("%.0f", b.Rate*float64(r.Effects)), r.Hits, r.Performed, r.Served, b.Claims, b.Completes,
		fmt.Sprintf("%.2f", float64(r.Tx.Commits)/float64(tasks)), fmt.Sprintf("%.2f", float64(r.Tx.Writes)/float64(tasks)),
		fmt.Sprintf("%.2f", float64(r.Tx.Writes-b.Claims-b.Completes)/effects)}
	row = append(row, b.CPU.cells(tasks)...)
	row = append(row, mb(b.PeakRSS), b.Conns)
	bookings, p50, p99 := any("-"), "-", "-"
	if r.Bookings >= 0 {
		bookings = r.Bookings
	}
	if len(r.Take) == 2 {
		p50, p99 = micros(r.Take[0]), micros(r.Take[1])
	}
	return append(row, bookings, p50, p99)
}

func micros(d time.Duration) string {
	return fmt.Sprintf("%.1f", float64(d)/float64(time.Microsecond))
}

// outcomes counts ledger.Do outcomes (ledger.Ledger.Observe).
type outcomes struct {
	performed, served, other atomic.Int64
}

func (o *outcomes) observe(_ string, _ ledger.Class, outcome string) {
	switch outcome {
	case "performed":
		o.performed.Add(1)
	case "served":
		o.served.Add(1)
	default:
		o.other.Add(1)
	}
}

// effectsTraced is effectsRun, with tracing on when traced.
func effectsTraced(ctx context.Context, srv *Server, f EffectsFlags, n int, traced bool, log *slog.Logger,
	out, errOut io.Writer) ([]EffectsResult, error) {
	if !traced {
		return effectsRun(ctx, srv, f, n, log, out, errOut)
	}
	traces, stop, err := traceOn(ctx)
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	rs, err := effectsRun(ctx, srv, f, n, log, out, errOut)
	for i := range rs {
		rs[i].Tracing = true
	}
	if serr := stop(); serr != nil && err == nil {
		err = fmt.Errorf("tracing: flushing spans: %w", serr)
	}
	total, names, cerr := sinkCounts(traces)
	if cerr != nil && err == nil {
		err = cerr
	}
	fmt.Fprintf(errOut, "effects=%d traced: the sink got %d spans %v\n", n, total, names)
	return rs, err
}

// effectsRun measures steps tasks with n effects each on a fresh database:
// a first burn-down, and with --replay a replay of every task.
func effectsRun(ctx context.Context, srv *Server, f EffectsFlags, n int, log *slog.Logger, out, errOut io.Writer) ([]EffectsResult, error) {
	ctx, cancel := context.WithTimeout(ctx, f.RunTimeout)
	defer cancel()
	rdb, err := srv.Fresh(ctx)
	if err != nil {
		return nil, err
	}
	defer rdb.Close()
	meter, err := NewTxMeter(ctx, rdb)
	if err != nil {
		return nil, err
	}
	defer meter.Close()
	ctl := meter.Pool()

	down := downstream.New()
	defer down.Close()
	u, _ := url.Parse(down.URL)
	// One idle connection per running task: http.DefaultTransport keeps two
	// per host, and at this rate the rest would be new connections, each
	// left in TIME_WAIT. (The daemon's http_request keeps 100.)
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = f.Concurrency
	transport.MaxIdleConns = 2 * f.Concurrency
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport}
	var check atomic.Pointer[limitCheck] // --tool custom with --limit-rate
	charge, err := tools.Define(tools.Spec[struct {
		Step int `json:"step"`
	}]{Name: "charge", Description: "POST a charge", Class: ledger.Keyed,
		Perform: func(ctx context.Context, c ledger.Call, a struct {
			Step int `json:"step"`
		}) (ledger.Result, error) {
			if c := check.Load(); c != nil {
				if err := c.take(ctx); err != nil {
					return ledger.Result{}, err
				}
			}
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, down.URL+"/charges",
				strings.NewReader(fmt.Sprintf(`{"step":%d}`, a.Step)))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", c.DownstreamKey(u.Host))
			resp, err := client.Do(req)
			if err != nil {
				return ledger.Result{}, err
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			return ledger.Result{Status: resp.StatusCode, Body: body}, nil
		}})
	if err != nil {
		return nil, err
	}

	// Every task the same steps: their effect keys differ by task id.
	type step struct {
		Tool string          `json:"tool"`
		Args json.RawMessage `json:"args"`
	}
	var payload struct {
		Steps []step `json:"steps"`
	}
	// What the door would store as the tasks' needs (a uniform fleet:
	// every daemon has them), so that claims match them as in production.
	var needs []string
	for i := range n {
		if f.Tool == "custom" {
			payload.Steps = append(payload.Steps, step{Tool: "charge", Args: json.RawMessage(fmt.Sprintf(`{"step":%d}`, i))})
			needs = append(needs, registry.CapTool("charge"))
			continue
		}
		name := "http_request"
		if f.Tool == "unsafe" {
			name = "unsafe_http"
		}
		needs = append(needs, registry.CapOrigin(name, grants.Origin(u))) // the tool itself: every daemon's
		payload.Steps = append(payload.Steps, step{Tool: name,
			Args: json.RawMessage(fmt.Sprintf(`{"method":"POST","url":%q,"body":{"step":%d}}`, down.URL+"/charges", i))})
	}
	raw, _ := json.Marshal(payload)
	if f.LimitRate != "" {
		r, err := flow.ParseRate(f.LimitRate)
		if err != nil {
			return nil, err
		}
		if _, err := flow.NewStore(ctl).Put(ctx, flow.Limit{Target: flow.HTTP(u), Rate: r, Burst: f.LimitBurst}); err != nil {
			return nil, err
		}
	}
	store := claims.New(ctl)
	batch := make([]claims.EnqueueParams, 0, f.InsertBatch)
	for done := 0; done < f.Tasks; done += len(batch) {
		batch = batch[:0]
		for i := done; i < f.Tasks && len(batch) < f.InsertBatch; i++ {
			batch = append(batch, claims.EnqueueParams{Kind: "steps", Payload: raw, Needs: needs})
		}
		if _, err := store.EnqueueBatch(ctx, batch); err != nil {
			return nil, fmt.Errorf("inserting tasks: %w", err)
		}
	}

	phase := func(name string) (EffectsResult, error) {
		res := EffectsResult{Effects: n, Phase: name, Bookings: -1}
		var err error
		if err = rdb.Settle(ctx, ctl, "tasks", "task_attempts", "ledger"); err != nil {
			return res, err
		}
		var bookings int64
		if f.LimitRate != "" {
			if err := ctl.QueryRow(ctx, bookingsSQL).Scan(&bookings); err != nil {
				return res, err
			}
		}
		var checkDB *pgxpool.Pool // the charge tool's limiter's, as a daemon's
		if f.LimitRate != "" && f.Tool == "custom" {
			if checkDB, err = rdb.DaemonPool(ctx, int32(f.MaxConns)); err != nil {
				return res, err
			}
			defer checkDB.Close()
			if err = checkDB.Ping(ctx); err != nil { // connected before the clock starts, as the daemon is
				return res, err
			}
			check.Store(newLimitCheck(checkDB, flow.HTTP(u)))
		}
		var seen outcomes
		spec := DaemonSpec{Tools: []tools.Tool{charge}, Configure: func(c *daemon.Config) {
			c.HTTPTools.AllowedHosts = []string{"http://" + u.Host}
			c.HTTPTools.UnsafeAllowedHosts = []string{"http://" + u.Host}
			c.Hooks.ObserveEffect = seen.observe
		}}
		before, err := meter.Read(ctx)
		if err != nil {
			return res, err
		}
		hits := down.Hits()
		b := BurnDown{Case: ThroughputCase{Pools: 1, Concurrency: f.Concurrency, Batch: f.Batch}, Tasks: f.Tasks,
			Since: time.Now(), MaxConns: int32(f.MaxConns), Daemon: spec, Flags: f.CommonFlags, Log: log,
			Out: out, ErrOut: errOut}
		res.Burn, err = b.Run(ctx, rdb, ctl)
		if err != nil {
			return res, err
		}
		if c := check.Swap(nil); c != nil {
			res.Take = c.quantiles(0.5, 0.99)
			checkDB.Close()
		}
		waitDisconnected(ctx, ctl)
		after, err := meter.Read(ctx)
		if err != nil {
			return res, err
		}
		res.Tx = after.Sub(before)
		res.Hits = down.Hits() - hits
		res.Performed, res.Served, res.Other = seen.performed.Load(), seen.served.Load(), seen.other.Load()
		if f.LimitRate != "" {
			var now int64
			if err := ctl.QueryRow(ctx, bookingsSQL).Scan(&now); err != nil {
				return res, err
			}
			res.Bookings = now - bookings
		}
		return res, nil
	}

	var results []EffectsResult
	first, err := phase("first")
	results = append(results, first)
	if err != nil {
		return results, err
	}
	want := int64(f.Tasks * n)
	if got := down.Effects(); got != want || first.Burn.TimedOut {
		return results, fmt.Errorf("the downstream performed %d business effects, want %d", got, want)
	}
	if !f.Replay {
		return results, nil
	}

	if err := replayAll(ctx, rdb, ctl); err != nil {
		return results, err
	}
	replay, err := phase("replay")
	results = append(results, replay)
	if err != nil {
		return results, err
	}
	if replay.Hits != 0 || replay.Served != want || replay.Performed != 0 || replay.Burn.TimedOut {
		return results, fmt.Errorf("replay: %d downstream calls, %d effects served, %d performed; want 0, %d, 0",
			replay.Hits, replay.Served, replay.Performed, want)
	}
	return results, nil
}

// replayAll requeues every task of the run's database as a replay
// (operator.Service.Replay), from 8 goroutines; ctl is a
// control pool to the run's database.
func replayAll(ctx context.Context, rdb *RunDB, ctl *pgxpool.Pool) error {
	db, err := rdb.DaemonPool(ctx, 8)
	if err != nil {
		return err
	}
	defer db.Close()
	var ids []int64
	rows, err := db.Query(ctx, "SELECT id FROM tasks ORDER BY id")
	if err != nil {
		return err
	}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	op := operator.New(db)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(ids) {
					return
				}
				if _, err := op.Replay(ctx, "", ids[i]); err != nil {
					errs <- fmt.Errorf("replaying task %d: %w", ids[i], err)
					return
				}
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
	}
	db.Close()
	waitDisconnected(ctx, ctl) // their statistics are flushed before the next reading
	return nil
}
