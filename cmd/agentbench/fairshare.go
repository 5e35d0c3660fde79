package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"time"

	"github.com/agentledger/agentledger/claims"
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
	Shares      int
	Running     int

	FairTenants    intList
	Backlog        int
	PerTenant      int
	Window         time.Duration
	Samples        int
	Rate           int
	Hold           time.Duration
	LatConcurrency int
	LatBatch       int
	FairCSV        string
	SkipCost       bool
	SkipFair       bool
}

// FairCost is what fair share costs the claim at one number of tenants.
type FairCost struct {
	Tenants int
	Claim   Percentiles
	Burn    ThroughputResult
}

func runFairShare(ctx context.Context, args []string, out, errOut io.Writer) error {
	f := FairFlags{Tenants: intList{1, 10, 1000}, FairTenants: intList{2, 10000}}
	fs := newFlagSet("fairshare",
		"Measures fair share between tenants in the claim. Cost: for each --tenants count, --tasks no-op tasks "+
			"spread evenly over that many tenants are claimed serially (due-only Claim calls of Limit --claim-batch "+
			"sharing one ClaimHint, each followed by an untimed SucceedMany), then as many are burnt down by one "+
			"pool. Fairness: for each --fair-tenants count N, N-1 tenants hold a backlog of tasks (each holding "+
			"its slot for --hold) worked by one daemon while a new tenant b enqueues --samples single tasks at "+
			"--rate: b's enqueue → start, and each backlog tenant's starts over --window.", errOut)
	f.register(fs)
	fs.Var(&f.Tenants, "tenants", "comma-separated numbers of tenants to spread the cost runs' tasks over")
	fs.IntVar(&f.Tasks, "tasks", 20000, "cost runs: tasks claimed serially, then as many burnt down")
	fs.IntVar(&f.ClaimBatch, "claim-batch", 100, "cost runs: Limit of each timed Claim call")
	fs.IntVar(&f.Concurrency, "concurrency", 1000, "cost runs: burn-down pool concurrency")
	fs.IntVar(&f.Batch, "batch", 1000, "cost runs: burn-down claim batch size")
	fs.IntVar(&f.MaxConns, "max-conns", 8, "connection pool size of the daemon")
	fs.IntVar(&f.Repeat, "repeat", 1, "run the cost sweep this many times (from 2 on, medians per tenant count follow)")
	fs.IntVar(&f.Shares, "shares", 0, "cost runs: this many of the tenants, spread evenly, get a tenant_shares row: "+
		"alternately weight 3 without a cap and weight 2 with max_running 5")
	fs.IntVar(&f.Running, "running", 0, "cost runs: this many more tasks, spread over the same tenants in queue "+
		"'held', are running (leased for an hour) while the timed claims run, as a busy fleet's would be")
	fs.Var(&f.FairTenants, "fair-tenants", "fairness runs: comma-separated numbers of tenants, each at least 2 "+
		"(N-1 with a backlog, and b)")
	fs.IntVar(&f.Backlog, "backlog", 600_000, "fairness runs: queued tasks spread over the N-1 backlog tenants "+
		"(one INSERT … SELECT), unless --per-tenant is set")
	fs.IntVar(&f.PerTenant, "per-tenant", 0, "fairness runs: queued tasks of each backlog tenant (0: --backlog spread)")
	fs.DurationVar(&f.Window, "window", time.Minute, "fairness runs: how long the backlog tenants' starts are watched")
	fs.IntVar(&f.Samples, "samples", 300, "fairness runs: tenant b's tasks, enqueued one at a time")
	fs.IntVar(&f.Rate, "rate", 50, "fairness runs: tenant b's tasks per second")
	fs.DurationVar(&f.Hold, "hold", 5*time.Millisecond, "fairness runs: how long each backlog task holds its slot")
	fs.IntVar(&f.LatConcurrency, "latency-concurrency", 100, "fairness runs: the daemon's concurrency (agentd's default)")
	fs.IntVar(&f.LatBatch, "latency-batch", 100, "fairness runs: the daemon's claim batch (agentd's default)")
	fs.StringVar(&f.FairCSV, "fair-csv", "", "fairness runs: write every backlog tenant's starts and longest gap "+
		"as CSV to this file")
	fs.BoolVar(&f.SkipCost, "no-cost", false, "skip the cost runs")
	fs.BoolVar(&f.SkipFair, "no-fair", false, "skip the fairness runs")
	fs.BoolVar(&f.SkipFair, "no-latency", false, "the same as --no-fair (its earlier name)")
	if err := parseFlags(fs, args, &f.CommonFlags); err != nil {
		return err
	}
	if f.Tasks <= 0 || f.ClaimBatch <= 0 || f.Concurrency <= 0 || f.Batch <= 0 || f.MaxConns <= 0 || f.Repeat <= 0 ||
		f.Backlog <= 0 || f.Samples <= 0 || f.Rate <= 0 || f.Hold < 0 || f.LatConcurrency <= 0 || f.LatBatch <= 0 ||
		f.Window <= 0 || f.Shares < 0 || f.PerTenant < 0 || f.Running < 0 {
		return errors.New("--tasks, --claim-batch, --concurrency, --batch, --max-conns, --repeat, --backlog, --samples, " +
			"--rate, --window, --latency-concurrency and --latency-batch must be positive, --hold, --shares, " +
			"--running and --per-tenant not negative")
	}
	for _, n := range f.FairTenants {
		if n < 2 {
			return fmt.Errorf("--fair-tenants %d: a fairness run needs at least 2 tenants (a backlog tenant and b)", n)
		}
		if f.PerTenant == 0 && f.Backlog < n-1 {
			return fmt.Errorf("--backlog %d is fewer tasks than the %d backlog tenants of --fair-tenants %d", f.Backlog, n-1, n)
		}
	}
	srv, log, err := f.open(ctx, errOut)
	if err != nil {
		return err
	}
	defer srv.Close()
	fmt.Fprintf(out, "# fairshare: %s\n# %s, GOMAXPROCS=%d, %d CPUs\n", srv.Describe(ctx),
		runtime.Version(), runtime.GOMAXPROCS(0), runtime.NumCPU())

	if !f.SkipCost {
		if err := fairCostSweep(ctx, srv, f, log, out, errOut); err != nil {
			return err
		}
	}
	if !f.SkipFair {
		if err := fairnessRuns(ctx, srv, f, log, out, errOut); err != nil {
			return err
		}
	}
	return nil
}

// fairCostSweep runs the cost runs --repeat times over --tenants and prints
// their table, each row with its ratios to the 1-tenant row of the same
// repeat, then (from 2 repeats on) the medians per tenant count.
func fairCostSweep(ctx context.Context, srv *Server, f FairFlags, log *slog.Logger, out, errOut io.Writer) error {
	fmt.Fprintf(out, "# cost: %d no-op tasks spread over N tenants, claimed serially by due-only Claim calls of Limit %d "+
		"sharing one ClaimHint as a worker's loop does (the first left out; each call includes its commit), then %d "+
		"more burnt down by 1 pool × %d × %d; \"vs 1\": claim p50 and tasks/s over those of the 1-tenant row of the "+
		"same repeat\n", f.Tasks, f.ClaimBatch, f.Tasks, f.Concurrency, f.Batch)
	if f.Shares > 0 {
		fmt.Fprintf(out, "# shares: min(%d, N) of the N tenants, every ⌊N/that⌋-th from the first, have a "+
			"tenant_shares row, alternately weight 3 (no cap) and weight 2 with max_running 5; the others weight 1, "+
			"no cap\n", f.Shares)
	}
	if f.Running > 0 {
		fmt.Fprintf(out, "# running: %d more tasks over the same tenants, in queue 'held', leased for an hour "+
			"throughout the timed claims\n", f.Running)
	}
	fmt.Fprintln(out)
	t := NewTable(append([]string{"tenants", "claims", "claim p50 ms", "p90 ms", "p99 ms", "mean ms", "µs/task",
		"burn secs", "tasks/s", "p50 vs 1", "tasks/s vs 1"}, cpuHeader...)...)
	var all [][]FairCost // per repeat, in --tenants order
	for range f.Repeat {
		var runs []FairCost
		for _, n := range f.Tenants {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			r, err := fairCostRun(ctx, srv, f, n, log, out, errOut)
			if err != nil {
				return fmt.Errorf("cost run with %d tenants: %w", n, err)
			}
			fmt.Fprintf(errOut, "fairshare %d tenants: claim p50 %s ms, %s tasks/s\n", n, ms(r.Claim.P50), burnRate(r.Burn))
			runs = append(runs, r)
		}
		for _, r := range runs {
			p50, burn := costRatios(r, runs)
			perTask := float64(r.Claim.Mean.Microseconds()) / float64(f.ClaimBatch)
			t.Add(append([]any{r.Tenants, r.Claim.N, ms(r.Claim.P50), ms(r.Claim.P90), ms(r.Claim.P99),
				ms(r.Claim.Mean), fmt.Sprintf("%.1f", perTask), fmt.Sprintf("%.2f", r.Burn.Elapsed.Seconds()),
				burnRate(r.Burn), ratioCell(p50), ratioCell(burn)}, r.Burn.CPU.cells(f.Tasks)...)...)
		}
		all = append(all, runs)
	}
	t.Print(out)
	if f.Repeat > 1 {
		fmt.Fprintf(out, "\n# cost over %d repeats, per tenant count: median (min–max)\n\n", f.Repeat)
		printCostMedians(out, f.Tenants, all)
	}
	return nil
}

func burnRate(b ThroughputResult) string {
	if b.TimedOut {
		return "timeout"
	}
	return fmt.Sprintf("%.0f", b.Rate)
}

// spreadTasksSQL inserts $1 due no-op tasks over $2 tenants (t0000, t0001,
// …; "default" when there is one), in one statement.
var spreadTasksSQL = `
INSERT INTO tasks (tenant, kind)
SELECT CASE WHEN $2 = 1 THEN 'default' ELSE ` + tenantName("'t'", "g % $2", "$2") + ` END, 'noop'
FROM generate_series(1, $1::int) g`

// tenantName is SQL for the name of tenant i of n: prefix, then i
// zero-padded to 4 digits or as many as n-1 has, so names sort as numbers.
func tenantName(prefix, i, n string) string {
	return prefix + ` || lpad((` + i + `)::text, greatest(4, length((` + n + ` - 1)::text)), '0')`
}

// heldRunningSQL inserts $1 tasks over $2 tenants (as spreadTasksSQL names
// them) in queue 'held', running under leases of an hour: what a busy
// fleet has in flight while it claims. They count towards their tenants'
// caps, and no timed claim (of the default queue) takes them.
var heldRunningSQL = `
INSERT INTO tasks (tenant, queue, kind, state, attempt, lease_owner, lease_token, lease_expires_at, attempted_at)
SELECT CASE WHEN $2 = 1 THEN 'default' ELSE ` + tenantName("'t'", "g % $2", "$2") + ` END, 'held', 'noop',
	'running', 1, 'agentbench-held', g, now() + interval '1 hour', now()
FROM generate_series(1, $1::int) g`

// sharesSQL gives $2 of $1 tenants (every $3-th) a tenant_shares row,
// alternately weight 3 without a cap and weight 2 with max_running 5.
var sharesSQL = `
INSERT INTO tenant_shares (tenant, weight, max_running, source)
SELECT CASE WHEN $1 = 1 THEN 'default' ELSE ` + tenantName("'t'", "i * $3", "$1") + ` END,
	CASE WHEN i % 2 = 0 THEN 3 ELSE 2 END, CASE WHEN i % 2 = 1 THEN 5 END, 'operator'
FROM generate_series(0, $2::int - 1) i`

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

	if shares := min(f.Shares, n); shares > 0 {
		if _, err := ctl.Exec(ctx, sharesSQL, n, shares, n/shares); err != nil {
			return res, fmt.Errorf("tenant shares: %w", err)
		}
	}
	if _, err := ctl.Exec(ctx, spreadTasksSQL, f.Tasks, n); err != nil {
		return res, err
	}
	if f.Running > 0 {
		if _, err := ctl.Exec(ctx, heldRunningSQL, f.Running, n); err != nil {
			return res, fmt.Errorf("running tasks: %w", err)
		}
	}
	// The share rows are analyzed as autovacuum would have them in a
	// deployment: unanalyzed, the planner guesses the table's size and
	// may pick a plan a deployment never sees.
	if err := rdb.Settle(ctx, ctl, "tasks", "task_attempts", "tenant_shares"); err != nil {
		return res, err
	}
	claimDB, err := rdb.DaemonPool(ctx, 1)
	if err != nil {
		return res, err
	}
	claimD, _, err := serialClaims(ctx, claims.New(claimDB), f.ClaimBatch, &claims.ClaimHint{})
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
