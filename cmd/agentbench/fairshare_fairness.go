package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/daemon"
	"github.com/agentledger/agentledger/worker"
)

// FairRun is one fairness run: N-1 tenants' backlog drains while tenant b
// arrives.
type FairRun struct {
	Tenants   int // the backlog tenants and b
	PerTenant int
	Mode      string

	B          Percentiles // b's enqueue → start, notStarted for a task that had not started by the end
	BStarted   int
	Duplicates int64
	// b's first task: enqueue → claim on the server's clock, and the
	// claims (that leased tasks) and tasks they leased meanwhile.
	FirstWait               time.Duration
	FirstClaims, FirstTasks int64

	Window  time.Duration // as measured on the server's clock
	Backlog []tenantStarts
	Starved int // backlog tenants with due tasks throughout and no start
	Drained int // backlog tenants whose due tasks ran out in the window
}

// notStarted stands for the enqueue → start of a task that had not started
// when the run ended: longer than any that did.
const notStarted = time.Duration(math.MaxInt64)

// censored returns the nearest-rank percentiles (no mean) of enqueue →
// start over every task of lat (ns; 0: not started, counted as
// notStarted). A tenant of a crowd of N gets about 1/N of the daemon's
// starts, so from some N on b's rate outruns its share and its last tasks
// are still queued when the run ends: leaving them out would flatter it.
func censored(lat []int64) Percentiles {
	xs := make([]time.Duration, len(lat))
	for i := range lat {
		xs[i] = notStarted
		if l := atomic.LoadInt64(&lat[i]); l > 0 {
			xs[i] = time.Duration(l)
		}
	}
	slices.Sort(xs)
	rank := func(q float64) time.Duration {
		return xs[max(0, min(int(q*float64(len(xs))+0.999999)-1, len(xs)-1))]
	}
	return Percentiles{N: len(xs), P50: rank(0.50), P90: rank(0.90), P99: rank(0.99), P999: rank(0.999),
		Min: xs[0], Max: xs[len(xs)-1]}
}

func startCell(d time.Duration) string {
	if d == notStarted {
		return "unstarted"
	}
	return ms(d)
}

// tenantStarts is one backlog tenant's starts over the window.
type tenantStarts struct {
	Tenant  string
	Starts  int64
	Longest time.Duration // the longest gap between its starts, the window's bounds counted as starts while it had due tasks
	Due     bool          // it had due tasks when the window began
}

// crowdAt is claims.crowdAt in Go: how many tenants with due tasks make a
// claim of limit tasks take turns instead of weighing them all.
func crowdAt(limit int) int { return max((limit+3)/4, 64) }

// claimMode names the claim's mode with n tenants with due tasks, for
// claims of at most limit tasks.
func claimMode(n, limit int) string {
	if n >= crowdAt(limit) {
		return "turns"
	}
	return "weighed"
}

func fairnessRuns(ctx context.Context, srv *Server, f FairFlags, log *slog.Logger, out, errOut io.Writer) error {
	fmt.Fprintf(out, "\n# fairness: N-1 tenants (a0000, …) hold a backlog of tasks, each holding its slot %s, worked by "+
		"one daemon (concurrency %d, batch %d); once the first started, a new tenant b enqueues %d single tasks at %d/s "+
		"and the backlog tenants' starts (claims, on the server's clock) are watched for %s. Claim mode: weighed below "+
		"%d tenants with due tasks (crowdAt for claims of up to %d), turns from there on.\n",
		f.Hold, f.LatConcurrency, f.LatBatch, f.Samples, f.Rate, f.Window, crowdAt(f.LatBatch), f.LatBatch)
	fmt.Fprintln(out, "# b first: its first task's enqueue → claim, and the claims (that leased tasks) and tasks leased "+
		"meanwhile. b's percentiles count a task not started by the run's end as longer than any (\"unstarted\"). Gap: a backlog tenant's longest time without a start, the window's start and (while it still "+
		"had due tasks) its end counted as starts. Starved: backlog tenants with due tasks and no start in the window.")
	fmt.Fprintln(out)
	var csvOut *os.File
	if f.FairCSV != "" { // created first: a path that cannot be written fails before the runs
		var err error
		if csvOut, err = os.Create(f.FairCSV); err != nil {
			return fmt.Errorf("--fair-csv: %w", err)
		}
		defer csvOut.Close()
	}
	var runs []FairRun
	for _, n := range f.FairTenants {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r, err := fairnessRun(ctx, srv, f, n, log)
		if err != nil {
			return fmt.Errorf("fairness run with %d tenants: %w", n, err)
		}
		fmt.Fprintf(errOut, "fairshare fairness %d tenants: b p50 %s ms, %d starved\n", n, startCell(r.B.P50), r.Starved)
		runs = append(runs, r)
	}
	t := NewTable("tenants", "mode", "per tenant", "b tasks", "started", "dup", "b p50 ms", "p90 ms", "p99 ms",
		"max ms", "b first ms", "claims", "tasks")
	for _, r := range runs {
		t.Add(r.Tenants, r.Mode, r.PerTenant, f.Samples, r.BStarted, r.Duplicates, startCell(r.B.P50),
			startCell(r.B.P90), startCell(r.B.P99), startCell(r.B.Max), ms(r.FirstWait), r.FirstClaims, r.FirstTasks)
	}
	t.Print(out)
	fmt.Fprintln(out)
	t = NewTable("tenants", "window secs", "backlog tenants", "starts", "starts/tenant min", "median", "max",
		"gap median ms", "gap max ms", "longest gap", "starved", "drained")
	for _, r := range runs {
		var total int64
		var starts []int64
		var gaps []time.Duration
		var worst tenantStarts
		for _, s := range r.Backlog {
			total += s.Starts
			starts = append(starts, s.Starts)
			gaps = append(gaps, s.Longest)
			if s.Longest > worst.Longest {
				worst = s
			}
		}
		slices.Sort(starts)
		g := Summarise(gaps)
		t.Add(r.Tenants, fmt.Sprintf("%.1f", r.Window.Seconds()), len(r.Backlog), total, starts[0],
			starts[len(starts)/2], starts[len(starts)-1], ms(g.P50), ms(g.Max), worst.Tenant, r.Starved, r.Drained)
	}
	t.Print(out)
	if csvOut != nil {
		if err := writeFairCSV(csvOut, runs); err != nil {
			return fmt.Errorf("--fair-csv: %w", err)
		}
	}
	return nil
}

// writeFairCSV writes one row per backlog tenant of each run.
func writeFairCSV(file *os.File, runs []FairRun) error {
	w := csv.NewWriter(file)
	_ = w.Write([]string{"tenants", "mode", "tenant", "due_at_start", "starts", "longest_gap_ms"})
	for _, r := range runs {
		for _, s := range r.Backlog {
			_ = w.Write([]string{strconv.Itoa(r.Tenants), r.Mode, s.Tenant, strconv.FormatBool(s.Due),
				strconv.FormatInt(s.Starts, 10), ms(s.Longest)})
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return err
	}
	return file.Close()
}

// fairBacklogSQL queues $1 tasks of kind hold for each of $2 tenants
// a0000 … in one statement, round-robin by id.
var fairBacklogSQL = `
INSERT INTO tasks (tenant, kind)
SELECT ` + tenantName("'a'", "g % $2", "$2") + `, 'hold'
FROM generate_series(0, $1::int * $2 - 1) g`

// fairStartsSQL reads each backlog tenant's starts (claims: attempted_at)
// in the window [$1, $2) and its longest gap, the window's start counted
// as a start when it had due tasks then, and its end when it still had.
// The tasks only ever run once, so attempted_at is each one's only start.
const fairStartsSQL = `
WITH backlog AS (
	SELECT tenant,
		count(*) FILTER (WHERE attempted_at >= $1 AND attempted_at < $2) AS starts,
		bool_or(attempted_at IS NULL OR attempted_at >= $1) AS due_start,
		bool_or(attempted_at IS NULL OR attempted_at >= $2) AS due_end
	FROM tasks WHERE kind = 'hold' GROUP BY tenant
),
points AS (
	SELECT tenant, attempted_at AS at FROM tasks WHERE kind = 'hold' AND attempted_at >= $1 AND attempted_at < $2
	UNION ALL SELECT tenant, $1 FROM backlog WHERE due_start
	UNION ALL SELECT tenant, $2 FROM backlog WHERE due_end
),
gaps AS (
	SELECT tenant, max(gap) AS longest FROM (
		SELECT tenant, at - lag(at) OVER (PARTITION BY tenant ORDER BY at) AS gap FROM points
	) g GROUP BY tenant
)
SELECT b.tenant, b.starts, b.due_start, b.due_end,
	coalesce(extract(epoch FROM g.longest), 0)::float8
FROM backlog b LEFT JOIN gaps g USING (tenant)
ORDER BY b.tenant`

// fairFirstSQL reads b's first task's wait (enqueue → claim) and the
// claims that leased tasks meanwhile (one attempted_at per claim: the
// claim's transaction time) and their tasks.
const fairFirstSQL = `
WITH first AS (SELECT created_at, attempted_at FROM tasks WHERE tenant = 'b' ORDER BY id LIMIT 1)
SELECT extract(epoch FROM f.attempted_at - f.created_at)::float8,
	count(DISTINCT t.attempted_at), count(t.id)
FROM first f LEFT JOIN tasks t ON t.attempted_at > f.created_at AND t.attempted_at < f.attempted_at
GROUP BY f.created_at, f.attempted_at`

// fairnessRun runs one fairness run with n tenants on a fresh database.
func fairnessRun(ctx context.Context, srv *Server, f FairFlags, n int, log *slog.Logger) (FairRun, error) {
	res := FairRun{Tenants: n, PerTenant: f.PerTenant, Mode: claimMode(n, f.LatBatch)}
	if res.PerTenant == 0 {
		res.PerTenant = f.Backlog / (n - 1)
	}
	ctx, cancel := context.WithTimeout(ctx, f.RunTimeout)
	defer cancel()
	rdb, ctl, err := srv.FreshControl(ctx)
	if err != nil {
		return res, err
	}
	defer rdb.Close()
	defer ctl.Close()
	if _, err := ctl.Exec(ctx, fairBacklogSQL, res.PerTenant, n-1); err != nil {
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

	// The handlers do what the latency run's did: the backlog's notes its
	// first start only (the starts are read from the tasks afterwards),
	// b's stamps its start.
	rec := newStarts(f.Samples)
	aFirst := make(chan struct{})
	var firstA sync.Once
	hold := worker.HandlerFunc(func(ctx context.Context, _ *agentledger.Task) (json.RawMessage, error) {
		firstA.Do(func() { close(aFirst) })
		select {
		case <-time.After(f.Hold):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return json.RawMessage(`{}`), nil
	})
	stamp := worker.HandlerFunc(func(_ context.Context, t *agentledger.Task) (json.RawMessage, error) {
		var p latencyPayload
		if err := json.Unmarshal(t.Payload, &p); err != nil || !rec.note(p.I, p.T) {
			return nil, agentledger.Permanent(fmt.Errorf("bad payload %s", t.Payload))
		}
		return json.RawMessage(`{}`), nil
	})
	w, err := NewPoolWorkers(ctx, rdb, PoolSpec{Pools: 1, Concurrency: f.LatConcurrency, Batch: f.LatBatch,
		MaxConns: int32(f.MaxConns), Tasks: res.PerTenant*(n-1) + f.Samples, Log: log,
		Daemon: DaemonSpec{Kinds: map[string]worker.Handler{"hold": hold, "stamp": stamp},
			Configure: func(c *daemon.Config) { c.Worker.ID = "bench-fair" }}})
	if err != nil {
		return res, err
	}
	defer w.Stop()
	if err := w.Start(ctx); err != nil {
		return res, err
	}
	select { // the window opens, and b's tasks arrive, once the backlog is being worked
	case <-aFirst:
	case <-ctx.Done():
		return res, ctx.Err()
	}
	store := claims.New(enqDB)
	if err := openConns(ctx, enqDB, 2); err != nil {
		return res, err
	}
	var winStart, winEnd time.Time
	if err := ctl.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&winStart); err != nil {
		return res, err
	}
	windowOver := time.After(f.Window)
	sampled := make(chan error, 1)
	var sent Sent
	go func() {
		sched := Schedule{Rate: f.Rate, Total: f.Samples, Enqueuers: 2}
		var err error
		sent, err = sched.Run(ctx, rec.since, func(ctx context.Context, i, _ int, at int64) error {
			payload, _ := json.Marshal(latencyPayload{I: i, T: at})
			_, err := store.Enqueue(ctx, claims.EnqueueParams{Tenant: "b", Kind: "stamp", Payload: payload})
			return err
		})
		sampled <- err
	}()
	select {
	case <-windowOver:
	case <-ctx.Done():
		return res, ctx.Err()
	}
	if err := ctl.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&winEnd); err != nil {
		return res, err
	}
	res.Window = winEnd.Sub(winStart)
	if err := <-sampled; err != nil {
		return res, fmt.Errorf("enqueue: %w", err)
	}
	rec.wait(ctx, 10*time.Second)
	var lr LatencyResult
	rec.fill(&lr, sent, 0)
	res.BStarted, res.Duplicates = lr.Started, lr.Duplicates
	res.B = censored(rec.lat)
	if res.BStarted == 0 {
		return res, fmt.Errorf("none of b's %d tasks started", f.Samples)
	}

	var wait float64
	if err := ctl.QueryRow(ctx, fairFirstSQL).Scan(&wait, &res.FirstClaims, &res.FirstTasks); err != nil {
		return res, fmt.Errorf("b's first task: %w", err)
	}
	res.FirstWait = time.Duration(wait * float64(time.Second))
	rows, err := ctl.Query(ctx, fairStartsSQL, winStart, winEnd)
	if err != nil {
		return res, fmt.Errorf("backlog starts: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var s tenantStarts
		var dueEnd bool
		var longest float64
		if err := rows.Scan(&s.Tenant, &s.Starts, &s.Due, &dueEnd, &longest); err != nil {
			return res, err
		}
		s.Longest = time.Duration(longest * float64(time.Second))
		switch {
		case s.Due && s.Starts == 0:
			res.Starved++
		case s.Due && !dueEnd:
			res.Drained++
		}
		res.Backlog = append(res.Backlog, s)
	}
	if err := rows.Err(); err != nil {
		return res, err
	}
	if len(res.Backlog) != n-1 {
		return res, fmt.Errorf("read %d backlog tenants, want %d", len(res.Backlog), n-1)
	}
	if res.Drained > 0 {
		return res, fmt.Errorf("%d backlog tenants ran out of due tasks in the window: raise --backlog "+
			"(or --per-tenant) or --hold", res.Drained)
	}
	return res, nil
}
