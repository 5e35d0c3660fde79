package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger/claims"
)

// GrowthFlags configure the growth command.
type GrowthFlags struct {
	CommonFlags
	Finished    countList
	LedgerRows  countList
	Tasks       int
	BurnTasks   int
	InsertBatch int
	ClaimBatch  int
	Concurrency int
	Batch       int
	MaxConns    int
	Effects     int
	FindSamples int
	Rounds      int
}

// GrowthResult is one size of the finished-tasks sweep.
type GrowthResult struct {
	Finished   int64
	TasksBytes int64 // tasks and task_attempts with their indexes
	Claim      Percentiles
	Succeed    Percentiles
	Burn       ThroughputResult
}

func runGrowth(ctx context.Context, args []string, out, errOut io.Writer) error {
	f := GrowthFlags{Finished: countList{0, 1_000_000, 5_000_000}}
	fs := newFlagSet("growth",
		"Measures how history slows the hot path. --finished N: with N succeeded tasks (and their attempt "+
			"records) pre-inserted, the latency of Claim calls and the burn-down throughput of --tasks no-op tasks. "+
			"--ledger-rows N: with N completed effects pre-inserted, the latency of ledger.Do serving an existing "+
			"effect (a replay hit), of a fresh effect, and of an operator's ledger.Find by key.", errOut)
	f.register(fs)
	f.RunTimeout = 20 * time.Minute
	fs.Lookup("run-timeout").DefValue = f.RunTimeout.String()
	fs.Var(&f.Finished, "finished", "comma-separated numbers of finished tasks to pre-insert, one run each (k and M suffixes; "+
		"not run when only --ledger-rows is given)")
	fs.Var(&f.LedgerRows, "ledger-rows", "comma-separated numbers of ledger rows to pre-insert, one run each (k and M suffixes)")
	fs.IntVar(&f.Tasks, "tasks", 20000, "no-op tasks claimed one batch at a time")
	// A burn-down of 20,000 lasted about a second: one stall of the shared
	// machine moved a run by 20%, as much as the growth it was to show.
	fs.IntVar(&f.BurnTasks, "burn-tasks", 100000, "no-op tasks burnt down by a pool after the claims")
	fs.IntVar(&f.InsertBatch, "insert-batch", 1000, "tasks per EnqueueBatch call when inserting")
	fs.IntVar(&f.ClaimBatch, "claim-batch", 10, "Limit of each timed Claim call")
	fs.IntVar(&f.Concurrency, "concurrency", 1000, "burn-down pool concurrency")
	fs.IntVar(&f.Batch, "batch", 1000, "burn-down claim batch size")
	fs.IntVar(&f.MaxConns, "max-conns", 8, "connection pool size of the burn-down pool")
	fs.IntVar(&f.Effects, "effects", 2000, "ledger runs: effects timed as replay hits, and as many as fresh effects")
	fs.IntVar(&f.Rounds, "rounds", 1, "finished-task runs: measurements (claims, then a burn-down) per filled database, "+
		"each on new connections after a fresh VACUUM ANALYZE, so each draws its plans anew")
	fs.IntVar(&f.FindSamples, "find-samples", 3, "ledger runs: timed ledger.Find calls by key (each may scan the table)")
	if err := parseFlags(fs, args, &f.CommonFlags); err != nil {
		return err
	}
	if f.Tasks <= 0 || f.BurnTasks <= 0 || f.InsertBatch <= 0 || f.ClaimBatch <= 0 || f.Concurrency <= 0 || f.Batch <= 0 ||
		f.MaxConns <= 0 || f.Effects <= 0 || f.FindSamples < 0 || f.Rounds <= 0 {
		return errors.New("--tasks, --burn-tasks, --insert-batch, --claim-batch, --concurrency, --batch, --max-conns, --effects and --rounds must be positive")
	}
	if len(f.LedgerRows) > 0 && !flagSet(fs, "finished") {
		f.Finished = nil
	}
	srv, log, err := f.open(ctx, errOut)
	if err != nil {
		return err
	}
	defer srv.Close()
	fmt.Fprintf(out, "# growth: %s\n# %s, GOMAXPROCS=%d, %d CPUs\n", srv.Describe(ctx),
		runtime.Version(), runtime.GOMAXPROCS(0), runtime.NumCPU())

	if len(f.Finished) > 0 {
		fmt.Fprintf(out, "# finished tasks: Claim calls of Limit %d over %d queued no-op tasks (the first call left out), each "+
			"followed by an untimed SucceedMany; then a burn-down of %d more with 1 pool × %d × %d; "+
			"MB: tasks and task_attempts with indexes\n\n", f.ClaimBatch, f.Tasks, f.BurnTasks, f.Concurrency, f.Batch)
		t := NewTable(append(append([]string{"finished", "round", "MB", "claims", "claim p50 ms", "p90 ms", "p99 ms", "max ms",
			"succeed p50 ms", "p99 ms", "burn secs", "tasks/s"}, cpuHeader...), "rss MB", "conns")...)
		for _, n := range f.Finished {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			fmt.Fprintf(errOut, "growth: %d finished tasks\n", n)
			err := growthRun(ctx, srv, f, n, log, out, errOut, func(round int, r GrowthResult) {
				rate := fmt.Sprintf("%.0f", r.Burn.Rate)
				if r.Burn.TimedOut {
					rate = "timeout"
				}
				t.Add(append(append([]any{n, round, mb(r.TasksBytes), r.Claim.N, ms(r.Claim.P50), ms(r.Claim.P90),
					ms(r.Claim.P99), ms(r.Claim.Max), ms(r.Succeed.P50), ms(r.Succeed.P99),
					fmt.Sprintf("%.2f", r.Burn.Elapsed.Seconds()), rate},
					r.Burn.CPU.cells(f.BurnTasks)...), mb(r.Burn.PeakRSS), r.Burn.Conns)...)
				fmt.Fprintf(errOut, "growth %d round %d: claim p50 %s ms p99 %s ms, %s tasks/s\n",
					n, round, ms(r.Claim.P50), ms(r.Claim.P99), rate)
			})
			if err != nil {
				return fmt.Errorf("run with %d finished tasks: %w", n, err)
			}
		}
		t.Print(out)
	}
	if len(f.LedgerRows) > 0 {
		fmt.Fprintf(out, "\n# ledger rows: one claimed task's %d effects, inserted first with the rows, served by ledger.Do "+
			"(hit); %d new effects of that task (fresh: look-up, a no-op perform, the fenced insert); ledger.Find by a "+
			"full key (find); MB: the ledger with its indexes\n\n", f.Effects, f.Effects)
		t := NewTable("ledger rows", "MB", "op", "calls", "p50 ms", "p90 ms", "p99 ms", "max ms", "mean ms")
		for _, n := range f.LedgerRows {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			fmt.Fprintf(errOut, "growth: %d ledger rows\n", n)
			r, err := ledgerGrowthRun(ctx, srv, f, n, errOut)
			if err != nil {
				return fmt.Errorf("run with %d ledger rows: %w", n, err)
			}
			for _, op := range []struct {
				name string
				p    Percentiles
			}{{"hit", r.Hit}, {"fresh", r.Fresh}, {"find", r.Find}} {
				if op.p.N == 0 {
					continue
				}
				t.Add(n, mb(r.Bytes), op.name, op.p.N, ms(op.p.P50), ms(op.p.P90), ms(op.p.P99), ms(op.p.Max), ms(op.p.Mean))
			}
			fmt.Fprintf(errOut, "growth ledger %d: hit p50 %s ms p99 %s ms\n", n, ms(r.Hit.P50), ms(r.Hit.P99))
		}
		t.Print(out)
	}
	return nil
}

// growthRun measures one size of history on a fresh database, f.Rounds
// times, reporting each round.
func growthRun(ctx context.Context, srv *Server, f GrowthFlags, n int64, log *slog.Logger, out, errOut io.Writer,
	report func(round int, r GrowthResult)) error {
	ctx, cancel := context.WithTimeout(ctx, f.RunTimeout*time.Duration(f.Rounds))
	defer cancel()
	rdb, ctl, err := srv.FreshControl(ctx)
	if err != nil {
		return err
	}
	defer rdb.Close()
	defer ctl.Close()

	if n > 0 {
		if err := fill(ctx, ctl, errOut, "finished tasks", n, finishedTasksSQL, n); err != nil {
			return err
		}
		if err := timed(errOut, "VACUUM ANALYZE, CHECKPOINT", func() error { return rdb.Settle(ctx, ctl) }); err != nil {
			return err
		}
	}
	for round := 1; round <= f.Rounds; round++ {
		res, err := growthRound(ctx, rdb, ctl, f, n, log, out, errOut)
		if err != nil {
			return fmt.Errorf("round %d: %w", round, err)
		}
		report(round, res)
	}
	return nil
}

// growthRound is one measurement of growthRun: claim latency over f.Tasks
// tasks, then a burn-down of as many more.
func growthRound(ctx context.Context, rdb *RunDB, ctl *pgxpool.Pool, f GrowthFlags, n int64, log *slog.Logger,
	out, errOut io.Writer) (GrowthResult, error) {
	res := GrowthResult{Finished: n}
	if err := ctl.QueryRow(ctx,
		"SELECT pg_total_relation_size('tasks') + pg_total_relation_size('task_attempts')").Scan(&res.TasksBytes); err != nil {
		return res, err
	}

	// Claim latency: one connection claiming serially.
	if _, err := insertNoops(ctx, ctl, f.Tasks, f.InsertBatch); err != nil {
		return res, err
	}
	if err := rdb.Settle(ctx, ctl); err != nil {
		return res, err
	}
	claimDB, err := rdb.DaemonPool(ctx, 1)
	if err != nil {
		return res, err
	}
	defer claimDB.Close()
	claimD, succeedD, err := serialClaims(ctx, claims.New(claimDB), f.ClaimBatch, nil)
	if err != nil {
		return res, err
	}
	claimDB.Close()
	waitDisconnected(ctx, ctl) // its backend's exit is not the burn-down's CPU
	res.Claim, res.Succeed = Summarise(claimD), Summarise(succeedD)

	// Burn-down of as many again.
	var minID int64
	if err := ctl.QueryRow(ctx, "SELECT coalesce(max(id), 0) FROM tasks").Scan(&minID); err != nil {
		return res, err
	}
	if _, err := insertNoops(ctx, ctl, f.BurnTasks, f.InsertBatch); err != nil {
		return res, err
	}
	if err := rdb.Settle(ctx, ctl); err != nil {
		return res, err
	}
	b := BurnDown{Case: ThroughputCase{Pools: 1, Concurrency: f.Concurrency, Batch: f.Batch}, Tasks: f.BurnTasks,
		MinID: minID, MaxConns: int32(f.MaxConns), Flags: f.CommonFlags, Log: log,
		Out: out, ErrOut: errOut}
	res.Burn, err = b.Run(ctx, rdb, ctl)
	return res, err
}

// serialClaims claims the default queue's tasks on one connection, batch
// by batch, each claim followed by an untimed SucceedMany, until none is
// left, and returns how long each claim and each completion took (the
// first call, which prepares the statement, left out). With a hint the
// claims are those of a worker's loop between polls: due-only, the
// tenants' rotation carried from one to the next, one tenant's tasks
// tried alone; without one, the full claim, rotation starting at the
// first tenant each time.
func serialClaims(ctx context.Context, store *claims.Store, batch int, hint *claims.ClaimHint) (claimD, succeedD []time.Duration, err error) {
	for {
		start := time.Now()
		tasks, err := store.Claim(ctx, claims.ClaimParams{Queue: claims.DefaultQueue, Worker: "bench-claimer",
			Limit: batch, Lease: time.Minute, DueOnly: hint != nil, Hint: hint})
		d := time.Since(start)
		if err != nil {
			return nil, nil, err
		}
		if len(tasks) == 0 {
			break
		}
		claimD = append(claimD, d)
		done := make([]claims.Success, len(tasks))
		for i, t := range tasks {
			done[i] = claims.Success{Lease: claims.LeaseOf(t)}
		}
		start = time.Now()
		lost, err := store.SucceedMany(ctx, done)
		succeedD = append(succeedD, time.Since(start))
		if err != nil {
			return nil, nil, err
		}
		if len(lost) > 0 {
			return nil, nil, fmt.Errorf("%d leases lost while claiming serially", len(lost))
		}
	}
	if len(claimD) > 1 {
		claimD, succeedD = claimD[1:], succeedD[1:]
	}
	return claimD, succeedD, nil
}

// countList is a flag holding comma-separated counts ≥ 0, with optional k
// (thousand) and M (million) suffixes.
type countList []int64

func (l *countList) String() string {
	s := make([]string, len(*l))
	for i, v := range *l {
		s[i] = strconv.FormatInt(v, 10)
	}
	return strings.Join(s, ",")
}

func (l *countList) Set(v string) error {
	var out countList
	for _, f := range strings.Split(v, ",") {
		f = strings.TrimSpace(f)
		mult := int64(1)
		switch {
		case strings.HasSuffix(f, "k"):
			f, mult = strings.TrimSuffix(f, "k"), 1_000
		case strings.HasSuffix(f, "M"):
			f, mult = strings.TrimSuffix(f, "M"), 1_000_000
		}
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("%q is not a count like 0, 5000, 100k or 5M", f)
		}
		out = append(out, n*mult)
	}
	*l = out
	return nil
}
