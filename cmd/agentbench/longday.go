package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger/admit"
	"github.com/agentledger/agentledger/agentledgertest/downstream"
	"github.com/agentledger/agentledger/agentledgertest/fakeopenai"
	"github.com/agentledger/agentledger/agentledgertest/slackfake"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/notify/outbox"
	"github.com/agentledger/agentledger/schedule"
)

// LongdayFlags configure the longday command.
type LongdayFlags struct {
	CommonFlags
	Rate            int
	Duration        time.Duration
	Window          time.Duration
	Mix             string
	Retention       time.Duration
	JanitorInterval time.Duration
	Cron            string
	DecideAfter     time.Duration
	SignalAfter     time.Duration
	Concurrency     int
	MaxConns        int
	Drain           time.Duration
	Flat            float64
	CSV             string
	Agentd          string
	AgentdLogLevel  string
	Autovacuum      string
}

func runLongday(ctx context.Context, args []string, out, errOut io.Writer) error {
	var f LongdayFlags
	fs := newFlagSet("longday",
		"A day's mixed work against agentd run as a process of its own, served by the fakes of agentledgertest "+
			"(model, Slack, a counting downstream): keyed steps, agent tasks, Slack notifications, sagas that "+
			"compensate, approvals the harness decides, signal and timer waits, cron and the janitor with a short "+
			"retention. Per --window: offered and completed tasks/s, enqueue→finish p50/p99, agentd's RSS and "+
			"goroutines, CPU, and the sizes of the tables; then charts and a verdict: flat or growing once the "+
			"retention window turned, and whether any business effect happened twice.", errOut)
	f.register(fs)
	fs.IntVar(&f.Rate, "rate", 1000, "tasks offered per second (open loop), of the mix")
	fs.DurationVar(&f.Duration, "duration", 30*time.Minute, "how long to offer tasks")
	fs.DurationVar(&f.Window, "window", 10*time.Second, "length of a reported window")
	fs.StringVar(&f.Mix, "mix", defaultMix, "parts of each class in the load: "+strings.Join(mixClasses, ", ")+
		" (approval tasks: every 4th denied)")
	fs.DurationVar(&f.Retention, "retention", 5*time.Minute,
		"agentd's --retain-tasks, --retain-ledger and --retain-outbox: finished work older than this is deleted during the run")
	fs.DurationVar(&f.JanitorInterval, "janitor-interval", 0, "agentd's --janitor-interval (0: a fifth of --retention)")
	fs.StringVar(&f.Cron, "cron", "@every 5s", "spec of the one cron schedule, which fires a noop task per slot")
	fs.DurationVar(&f.DecideAfter, "decide-after", time.Second, "how long an approval request waits before the harness decides it")
	fs.DurationVar(&f.SignalAfter, "signal-after", time.Second, "how long after its task's submission the harness sends a signal task's signal")
	fs.IntVar(&f.Concurrency, "concurrency", 100, "agentd's --concurrency (per queue: default and notify)")
	fs.IntVar(&f.MaxConns, "max-conns", 20, "agentd's --max-conns")
	fs.DurationVar(&f.Drain, "drain", time.Minute, "after --duration, how long to wait for the offered tasks to finish")
	fs.Float64Var(&f.Flat, "flat", 0.2, "the verdict's tolerance: a figure that rose by more than this fraction is growing")
	fs.StringVar(&f.CSV, "csv", "longday.csv", "write the windows as CSV here; the charts go next to it (NAME-throughput.svg, …)")
	fs.StringVar(&f.Agentd, "agentd", "", "the agentd binary (default: build cmd/agentd of this checkout)")
	fs.StringVar(&f.Autovacuum, "autovacuum", "default",
		"default: the server's autovacuum settings; tuned: the run's tables get the storage parameters a deployment "+
			"whose autovacuum falls behind should set ("+tunedAutovacuum+")")
	fs.StringVar(&f.AgentdLogLevel, "agentd-log-level", "warn", "agentd's --log-level (its log goes to standard error)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %v", fs.Args())
	}
	if !flagSet(fs, "run-timeout") {
		f.RunTimeout = f.Duration + f.Drain + 5*time.Minute
	}
	if f.JanitorInterval == 0 {
		f.JanitorInterval = f.Retention / 5
	}
	if err := f.check(); err != nil {
		return err
	}
	mix, err := f.validate()
	if err != nil {
		return err
	}
	srv, _, err := f.open(ctx, errOut)
	if err != nil {
		return err
	}
	defer srv.Close()
	fmt.Fprintf(out, "# longday: %s\n# %s, %d CPUs; %d tasks/s offered for %s, windows of %s; mix: %s; retention %s, "+
		"janitor every %s, cron %q; approvals decided after %s (every %dth denied), signals sent after %s; autovacuum %s\n",
		srv.Describe(ctx), runtime.Version(), runtime.NumCPU(), f.Rate, f.Duration, f.Window, mix, f.Retention,
		f.JanitorInterval, f.Cron, f.DecideAfter, denyEvery, f.SignalAfter, f.Autovacuum)
	ctx, cancel := context.WithTimeout(ctx, f.RunTimeout)
	defer cancel()
	res, err := longdayRun(ctx, srv, f, mix, out, errOut)
	if len(res.Windows) > 0 {
		if cerr := longdayCharts(f, res.Windows); cerr != nil {
			fmt.Fprintf(errOut, "longday: charts: %v\n", cerr)
		}
		verdict(out, f, res)
	}
	return err
}

// validate checks the command's own flags and returns the mix.
func (f *LongdayFlags) validate() (Mix, error) {
	switch {
	case f.Rate <= 0 || f.Duration <= 0 || f.Window <= 0 || f.Retention <= 0 || f.JanitorInterval <= 0 ||
		f.Concurrency <= 0 || f.MaxConns <= 0 || f.Drain < 0 || f.DecideAfter < 0 || f.SignalAfter < 0:
		return Mix{}, errors.New("--rate, --duration, --window, --retention, --janitor-interval, --concurrency and " +
			"--max-conns must be positive; --drain, --decide-after and --signal-after not negative")
	case f.Retention <= f.Window+settleLag:
		return Mix{}, fmt.Errorf("--retention must be longer than --window and %s, so that a window's tasks are counted before the janitor deletes them", settleLag)
	case f.Window > f.Duration:
		return Mix{}, errors.New("--window must not be longer than --duration")
	case f.Flat <= 0:
		return Mix{}, errors.New("--flat must be positive")
	case f.Autovacuum != "default" && f.Autovacuum != "tuned":
		return Mix{}, fmt.Errorf("--autovacuum must be default or tuned, not %q", f.Autovacuum)
	case f.CSV == "":
		return Mix{}, errors.New("--csv must name a file: the charts go next to it")
	case f.RunTimeout <= f.Duration+f.Drain:
		return Mix{}, errors.New("--run-timeout must be longer than --duration and --drain")
	}
	mix, err := parseMix(f.Mix)
	if err != nil {
		return mix, fmt.Errorf("--mix: %w", err)
	}
	if err := (&schedule.Schedule{Name: "check", Spec: f.Cron, Kind: "noop"}).Validate(); err != nil {
		return mix, fmt.Errorf("--cron: %w", err)
	}
	return mix, nil
}

// LongdayWindow is one window of a long day.
type LongdayWindow struct {
	Start, Len time.Duration
	Offered    int64 // tasks submitted in the window
	All        ClassWindow
	ByClass    map[string]ClassWindow
	Unfinished map[string]int64 // by state, at the window's end
	// OutboxPending is the notifications not yet delivered at its end.
	OutboxPending int64
	RSS           int64         // agentd's, bytes
	Goroutines    int64         // agentd's go_goroutines; -1 unknown
	AgentdCPU     time.Duration // agentd's user+system time in the window
	CPU           CPUUse        // Self: the harness's, fakes included; Server: PostgreSQL's
	HarnessHeap   int64         // the harness's live heap after its last collection, bytes
	HarnessGC     time.Duration // the harness's collector CPU in the window (part of CPU.Self)
	Tables        map[string]TableSample
	Deleted       int64 // rows the janitor deleted in the window, every sweep
	Cron          int64 // cron fires in the window
	Decided       int64 // approval requests the harness decided
	Signalled     int64 // signals the harness sent
}

// Backlog is the window's tasks that were due but not yet done: queued,
// running, retrying or compensating (not the waiting ones).
func (w LongdayWindow) Backlog() int64 {
	return w.Unfinished["queued"] + w.Unfinished["running"] + w.Unfinished["retrying"] + w.Unfinished["compensating"]
}

// LongdayResult is a long day's outcome.
type LongdayResult struct {
	Windows  []LongdayWindow
	Offered  int64
	Sent     time.Duration  // how long tasks were offered
	MaxLag   time.Duration  // how late the producer fell behind the schedule, at most
	Finished map[string]int // by class, over the whole run and the drain
	Unexp    map[string]int // by class: finished in another state than expected
	Drained  bool
	Left     map[string]int64 // unfinished at the end, by state
	// How the count of finishes went (finishes): frontier readings behind
	// the last, tasks read again with the same finish, and tasks whose
	// finish was stamped again.
	Behind, Reread, Refinished int
	Checks                     effectChecks
}

// effectChecks are the counts at the fakes at the end.
type effectChecks struct {
	Effects, Hits, Refused int64 // downstream
	Expected               int64 // effects the finished tasks account for
	DupBodies              int   // bodies performed as more than one effect
	ModelCalls             int
	Posts, Expected2       int // Slack messages in the notify channel, and notify tasks succeeded
	DupPosts               int // messages of one notification key posted more than once
	ApprovalPosts          int
}

// ldState is what the harness's goroutines share.
type ldState struct {
	mu       sync.Mutex
	deny     map[int64]bool // approval tasks not yet decided: deny?
	signals  chan ldSignalDue
	decided  atomic.Int64
	signaled atomic.Int64
	offered  atomic.Int64
}

type ldSignalDue struct {
	at  time.Time
	key string
}

func longdayRun(ctx context.Context, srv *Server, f LongdayFlags, mix Mix, out, errOut io.Writer) (LongdayResult, error) {
	res := LongdayResult{Finished: map[string]int{}, Unexp: map[string]int{}}
	rdb, ctl, err := srv.FreshControl(ctx)
	if err != nil {
		return res, err
	}
	defer rdb.Close()
	defer ctl.Close()
	if f.Autovacuum == "tuned" {
		if err := tuneAutovacuum(ctx, ctl); err != nil {
			return res, err
		}
	}
	side, err := rdb.Pool(ctx, 4) // the harness's submissions, decisions and signals
	if err != nil {
		return res, err
	}
	defer side.Close()

	// The fakes agentd talks to.
	// They keep only what the checks count: kept whole, millions of bodies
	// made the harness's collections long enough to slow their answers.
	down := downstream.New()
	defer down.Close()
	down.CountOnly()
	down.SetRefuse(func(path string, _ []byte) bool { return path == ldRefusedPath })
	const modelKey, slackToken = "sk-longday", "xoxb-longday"
	model, stopModel := fakeopenai.Start(modelKey, ldModel(down.URL))
	defer stopModel()
	model.CountOnly()
	slack, stopSlack := slackfake.Start(slackToken)
	defer stopSlack()
	slack.CountOnly()
	notifyCh := slack.AddChannel(ldNotifyChannel)
	approvalsCh := slack.AddChannel(ldApprovalsChannel)

	if _, err := outbox.NewRules(ctl).Put(ctx, outbox.Rule{Name: "ld-notify", Queue: ldNotifyQueue,
		Events: []string{"succeeded"}, Channel: ldNotifyChannel}, false); err != nil {
		return res, fmt.Errorf("adding the notification rule: %w", err)
	}
	if _, err := schedule.NewStore(ctl).Add(ctx, schedule.Schedule{Name: "ld-tick", Spec: f.Cron, Kind: "noop"}); err != nil {
		return res, fmt.Errorf("adding the cron schedule: %w", err)
	}

	bin := f.Agentd
	tmp, err := os.MkdirTemp("", "agentbench-longday-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(tmp)
	if bin == "" {
		fmt.Fprintln(errOut, "longday: building agentd")
		if bin, err = buildAgentd(ctx, tmp, errOut); err != nil {
			return res, err
		}
	}
	dbURL, err := rdb.URL()
	if err != nil {
		return res, err
	}
	listen, err := freeAddr()
	if err != nil {
		return res, err
	}
	// The fake Slack takes what the load sends: lift agentd's default of 50
	// posts a minute per channel, as a deployment's config file would.
	conf := filepath.Join(tmp, "agentd.toml")
	if err := os.WriteFile(conf, []byte(ldAgentdConfig), 0o600); err != nil {
		return res, err
	}
	retain := f.Retention.String()
	d, err := startAgentd(ctx, bin, listen, []string{
		"--config", conf, "--state-dir", filepath.Join(tmp, "state"), "--log-level", f.AgentdLogLevel,
		"--queues", "default," + ldNotifyQueue, "--concurrency", fmt.Sprint(f.Concurrency), "--max-conns", fmt.Sprint(f.MaxConns),
		"--llm-base-url", model.BaseURL(), "--llm-model", "longday-model",
		"--http-allowed-hosts", down.URL,
		"--slack-api-url", slack.APIURL(), "--approvals-channel", ldApprovalsChannel,
		"--slack-channel-interval", "1ms", "--slack-workspace-rate", "100000",
		"--janitor-interval", f.JanitorInterval.String(),
		"--retain-tasks", retain, "--retain-ledger", retain, "--retain-outbox", retain,
	}, []string{"DATABASE_URL=" + dbURL, "AGENTLEDGER_LLM_API_KEY=" + modelKey, "AGENTLEDGER_SLACK_TOKEN=" + slackToken}, errOut)
	if err != nil {
		return res, err
	}
	defer func() {
		if err := d.Stop(); err != nil {
			fmt.Fprintf(errOut, "longday: agentd: %v\n", err)
		}
	}()

	// Each class's needs, as the door finds them in its payload: the same
	// for every task of the class, so admitted once.
	pay := ldPayloads{base: down.URL}
	needs := map[string][]string{}
	for _, c := range allClasses {
		if c == classCron {
			continue
		}
		t := pay.task(c, 0)
		p, err := (&admit.Door{}).Admit(ctx, ctl, admit.Submission{Caller: admit.Operator, Unserved: true,
			Params: claims.EnqueueParams{Queue: t.queue, Kind: t.kind, Payload: t.payload}})
		if err != nil {
			return res, fmt.Errorf("the %s task is refused: %w", c, err)
		}
		needs[c] = p.Needs
	}

	csvOut, err := newLongdayCSV(f.CSV)
	if err != nil {
		return res, err
	}
	defer csvOut.Close()

	st := &ldState{deny: map[int64]bool{}, signals: make(chan ldSignalDue, max(f.Rate, 1)*60)}
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	var wg sync.WaitGroup
	helperErr := make(chan error, 3)
	wg.Add(2)
	go func() { defer wg.Done(); helperErr <- decideApprovals(runCtx, side, st, f.DecideAfter) }()
	go func() { defer wg.Done(); helperErr <- sendSignals(runCtx, side, st) }()
	defer func() { stopRun(); wg.Wait() }()

	origin := time.Now()
	type produced struct {
		lag, sent time.Duration
		err       error
	}
	prodDone := make(chan produced, 1)
	go func() {
		lag, err := produce(runCtx, side, f, mix, pay, needs, st, origin)
		prodDone <- produced{lag, time.Since(origin), err}
	}()

	// Windows count the tasks finished up to a frontier on the database's
	// clock (frontierSQL): a task's finished_at is its transaction's
	// start, so one stamped before a window's end may commit after the
	// window was read; the frontier is never later than the start of a
	// transaction still open, so each finish falls in a window read after
	// it committed.
	dbNow := func() (time.Time, error) {
		var t time.Time
		err := ctl.QueryRow(ctx, frontierSQL, settleLag.Seconds()).Scan(&t)
		return t, err
	}
	start, err := dbNow()
	if err != nil {
		return res, err
	}
	fin := newFinishes(ctl, start)
	cpu := StartCPU(ctx, ctl)
	self := newSelfGC()
	agentdCPU := func() time.Duration { s, _ := readProcStat(d.PID()); return s.self }
	prevAgentd := agentdCPU()
	counters := func() (deleted, cron int64) {
		m, err := d.Metrics(ctx, "agentledger_janitor_deleted_total", "agentledger_cron_fires_total")
		if err != nil {
			return -1, -1
		}
		return int64(m["agentledger_janitor_deleted_total"]), int64(m["agentledger_cron_fires_total"])
	}
	prevDel, prevCron := counters()
	var prevOffered, prevDecided, prevSignalled int64
	live := newLiveTable(errOut, "elapsed", "offered/s", "done/s", "p50 ms", "p99 ms", "unexp", "backlog", "waiting",
		"outbox q", "rss MB", "gorout", "agentd cores", "pg cores", "harness cores", "tasks MB", "ledger MB", "outbox MB")
	nWindows := int(f.Duration / f.Window)
	prodFinished := false
	for k := range nWindows {
		end := origin.Add(time.Duration(k+1) * f.Window)
		timer := time.NewTimer(time.Until(end))
		select {
		case <-ctx.Done():
			timer.Stop()
			return res, ctx.Err()
		case p := <-prodDone:
			prodFinished = true
			res.MaxLag, res.Sent = p.lag, p.sent
			if p.err != nil {
				timer.Stop()
				return res, fmt.Errorf("submitting: %w", p.err)
			}
			<-timer.C
		case err := <-helperErr:
			timer.Stop()
			if err != nil {
				return res, err
			}
		case <-timer.C:
		}
		to, err := dbNow()
		if err != nil {
			return res, err
		}
		w := LongdayWindow{Start: time.Duration(k) * f.Window, Len: f.Window, Goroutines: -1}
		if w.All, w.ByClass, err = fin.upTo(ctx, to); err != nil {
			return res, err
		}
		if w.Unfinished, err = sampleUnfinished(ctx, ctl); err != nil {
			return res, err
		}
		if w.OutboxPending, err = outboxPending(ctx, ctl); err != nil {
			return res, err
		}
		if w.Tables, err = sampleTables(ctx, ctl); err != nil {
			return res, err
		}
		w.RSS = d.RSS()
		if m, err := d.Metrics(ctx, "go_goroutines"); err == nil {
			if g, ok := m["go_goroutines"]; ok {
				w.Goroutines = int64(g)
			}
		}
		now := agentdCPU()
		w.AgentdCPU, prevAgentd = now-prevAgentd, now
		w.CPU = cpu.Lap(ctx)
		w.HarnessHeap, w.HarnessGC = self.Lap()
		del, cr := counters()
		w.Deleted, w.Cron, prevDel, prevCron = del-prevDel, cr-prevCron, del, cr
		off, dec, sig := st.offered.Load(), st.decided.Load(), st.signaled.Load()
		w.Offered, w.Decided, w.Signalled = off-prevOffered, dec-prevDecided, sig-prevSignalled
		prevOffered, prevDecided, prevSignalled = off, dec, sig
		for c, cw := range w.ByClass {
			res.Finished[c] += cw.Finished
			res.Unexp[c] += cw.Unexpected
		}
		res.Windows = append(res.Windows, w)
		if err := csvOut.Write(w); err != nil {
			return res, err
		}
		secs := w.Len.Seconds()
		live.Row(fmt.Sprintf("%.0f", (w.Start+w.Len).Seconds()), fmt.Sprintf("%.0f", float64(w.Offered)/secs),
			fmt.Sprintf("%.0f", float64(w.All.Finished)/secs), ms(w.All.Lat.P50), ms(w.All.Lat.P99), w.All.Unexpected,
			w.Backlog(), w.Unfinished["waiting"], w.OutboxPending, mb(w.RSS), w.Goroutines,
			fmt.Sprintf("%.2f", w.AgentdCPU.Seconds()/secs), w.CPU.serverCores(),
			fmt.Sprintf("%.2f", w.CPU.Self.Seconds()/secs),
			mb(w.Tables["tasks"].Total), mb(w.Tables["ledger"].Total), mb(w.Tables["outbox"].Total))
	}
	if !prodFinished {
		p := <-prodDone
		res.MaxLag, res.Sent = p.lag, p.sent
		if p.err != nil {
			return res, fmt.Errorf("submitting: %w", p.err)
		}
	}
	res.Offered = st.offered.Load()

	// The drain: the last tasks finish, their approvals decided and their
	// signals sent; then what finished since the last window is counted.
	fmt.Fprintf(errOut, "longday: load ended; waiting up to %s for the offered tasks to finish\n", f.Drain)
	// Finishes are counted while the last tasks drain, as in the windows:
	// the janitor keeps deleting tasks older than the retention, and a
	// finish not counted before it is deleted would never be.
	var countErr error
	res.Drained, res.Left = drain(ctx, ctl, f.Drain, func() {
		to, err := dbNow()
		if err == nil {
			var cw map[string]ClassWindow
			if _, cw, err = fin.upTo(ctx, to); err == nil {
				for c, w := range cw {
					res.Finished[c] += w.Finished
					res.Unexp[c] += w.Unexpected
				}
			}
		}
		if err != nil && countErr == nil {
			countErr = err
		}
	})
	if countErr != nil {
		return res, countErr
	}
	var to time.Time
	if err := ctl.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&to); err != nil {
		return res, err
	}
	_, tail, err := fin.upTo(ctx, to) // drained: every finish committed
	if err != nil {
		return res, err
	}
	for c, cw := range tail {
		res.Finished[c] += cw.Finished
		res.Unexp[c] += cw.Unexpected
	}
	// The notifications of the last tasks are delivered shortly after.
	waitOutbox(ctx, ctl, 30*time.Second)
	res.Behind, res.Reread, res.Refinished = fin.Behind, fin.Reread, fin.Refinished
	res.Checks = checkEffects(down, slack, model, notifyCh, approvalsCh, res)
	return res, nil
}

// settleLag is how far behind the database's clock a window is read at
// least: longer than a transaction that finishes tasks takes, so that
// one that has not yet shown in pg_stat_activity is not passed by.
const settleLag = 2 * time.Second

// frontierSQL is the bound a window is read up to: settleLag ($1, in
// seconds) behind the database's clock, and no later than the start of
// any transaction of another session still open (whose finished tasks
// are stamped with that start, and are not visible until it commits).
// It never moves back: a transaction open now either was open at the
// last read, and so started after that frontier, or began since.
const frontierSQL = `SELECT least(clock_timestamp() - make_interval(secs => $1),
	(SELECT min(xact_start) FROM pg_stat_activity
	 WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'))`

// ldAgentdConfig is agentd's config file: Slack's pacing lifted for the
// fake (real Slack allows about one post a second per channel).
const ldAgentdConfig = `[[limit]]
target = "slack-channel:*"
rate = "1000/s"
burst = 100

[[limit]]
target = "slack-workspace"
rate = "1000/s"
burst = 100
`

// produce offers the mix at f.Rate until f.Duration has passed since
// origin: every tick, the tasks due by then in one EnqueueBatch (a late
// tick catches up). It returns how far it fell behind, at most.
func produce(ctx context.Context, pool *pgxpool.Pool, f LongdayFlags, mix Mix, pay ldPayloads, needs map[string][]string,
	st *ldState, origin time.Time) (time.Duration, error) {
	const tick = 50 * time.Millisecond
	const most = 2000 // tasks in one statement
	store := claims.New(pool)
	perClass := map[string]int{}
	var sent int
	var maxLag time.Duration
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return maxLag, ctx.Err()
		case <-t.C:
		}
		el := min(time.Since(origin), f.Duration)
		due := int(float64(f.Rate) * el.Seconds())
		if due > sent+most { // behind by more than a statement: note how far
			maxLag = max(maxLag, time.Duration(float64(due-sent)/float64(f.Rate)*float64(time.Second)))
		}
		for sent < due {
			n := min(due-sent, most)
			batch := make([]claims.EnqueueParams, n)
			tasks := make([]ldTask, n)
			for j := range batch {
				c := mix.class(sent + j)
				tk := pay.task(c, perClass[c])
				perClass[c]++
				tasks[j] = tk
				batch[j] = claims.EnqueueParams{Queue: tk.queue, Kind: tk.kind, Payload: tk.payload,
					SubmissionKey: tk.key, Needs: needs[tk.class]}
			}
			got, err := store.EnqueueBatch(ctx, batch)
			if err != nil {
				return maxLag, err
			}
			at := time.Now().Add(f.SignalAfter)
			st.mu.Lock()
			for j, r := range got {
				switch tasks[j].class {
				case classApprove:
					st.deny[r.Task.ID] = false
				case classDeny:
					st.deny[r.Task.ID] = true
				}
			}
			st.mu.Unlock()
			for _, tk := range tasks {
				if tk.class == classSignal {
					select {
					case st.signals <- ldSignalDue{at: at, key: tk.key}:
					default:
						return maxLag, errors.New("the signal queue is full: signals are sent slower than offered")
					}
				}
			}
			sent += n
			st.offered.Add(int64(n))
		}
		if el >= f.Duration {
			return maxLag, nil
		}
	}
}

// drain waits up to d until no task is queued, running, retrying,
// compensating or waiting, calling each at every look; it returns whether
// that happened and what is left.
func drain(ctx context.Context, pool *pgxpool.Pool, d time.Duration, each func()) (bool, map[string]int64) {
	deadline := time.Now().Add(d)
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		each()
		left, err := sampleUnfinished(ctx, pool)
		if err == nil {
			busy := int64(0)
			for s, n := range left {
				if s != "needs_attention" {
					busy += n
				}
			}
			if busy == 0 {
				return true, left
			}
		}
		if time.Now().After(deadline) {
			return false, left
		}
		select {
		case <-ctx.Done():
			return false, left
		case <-t.C:
		}
	}
}

// waitOutbox waits up to d until the outbox has no pending event.
func waitOutbox(ctx context.Context, pool *pgxpool.Pool, d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if n, err := outboxPending(ctx, pool); err != nil || n == 0 {
			return
		}
		time.Sleep(100 * time.Millisecond) // polled: the dispatcher signals nothing outside agentd
	}
}
