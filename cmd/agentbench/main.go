// Command agentbench measures the claim protocol (packages claims and
// worker) on a real PostgreSQL: how fast a backlog of no-op tasks burns down,
// and how long a task waits between Enqueue and the start of its handler.
//
// Usage:
//
//	agentbench throughput [flags]   burn-down throughput sweep
//	agentbench latency [flags]      enqueue→start latency at a steady rate
//	agentbench help [command]       this text, or a command's flags
//
// # Database
//
// With no --database-url (and no DATABASE_URL) the benchmark starts or joins
// the embedded cluster of database.Open in --state-dir (default
// /tmp/agentbench-state; fsync on, the production default). Every run gets
// a fresh database: --reset=template (the default) migrates a template
// database once and creates each run's database from it with CREATE
// DATABASE … TEMPLATE, dropping it afterwards; this needs the CREATEDB
// privilege. --reset=truncate instead migrates the target database itself
// and empties tasks and task_attempts (TRUNCATE, then VACUUM ANALYZE) before
// every run: it destroys the tasks in that database, so it is never chosen
// automatically.
//
// # throughput
//
// Each run inserts --tasks no-op tasks (default 50000) with
// claims.Store.EnqueueBatch in batches of --insert-batch, runs VACUUM ANALYZE
// and CHECKPOINT, then starts --pools worker.Pool instances (each on its own
// connection pool, as separate daemons would be) whose handler counts and
// calls tools.Noop. The clock runs from the pools' start until a check finds
// no task left that is not succeeded (the check starts when the handler
// count reaches --tasks, and runs every second as a safety net). The sweep
// is the cross product of --pools, --concurrency and --batch (a batch larger
// than the concurrency is skipped: the pool clamps it); --repeat repeats it.
// Columns: claims and completes are the claim and succeed statements that
// changed rows (counted afterwards from task_attempts: all tasks of one
// statement share its now()), with the average tasks per statement.
//
// # CPU columns (both commands)
//
// go cores, pg cores and others are the cores used on average during the
// measured phase by this process, by the PostgreSQL server (its processes
// read from /proc, so only for a server on this machine; "?" otherwise) and
// by everything else on the machine — a busy "others" means the figures of
// that run were disturbed. go us/task and pg us/task are the CPU time per
// task of this process and of the server: the efficiency figures, steadier
// than tasks/s when the machine is shared.
//
// # latency
//
// One idle worker.Pool (LISTEN/NOTIFY on unless --poll-only, poll interval
// --poll-interval, default the worker's 1s) runs while --enqueuers
// goroutines, on a separate connection pool, enqueue single tasks on an
// open-loop schedule of --rate tasks/s for --duration. Each payload carries
// the monotonic time taken just before Enqueue; the handler notes when it
// starts. Percentiles of enqueue→start exclude the first --warmup; the
// Enqueue call itself (insert + commit) is reported alongside.
//
// # Profiling
//
// --cpuprofile=PREFIX writes a pprof CPU profile of this process per
// measured phase (PREFIX-<run>.pprof: the burn-down of a throughput run, or
// the steady phase of a latency run). --pg-stats reports, per run, the
// server's CPU time by kind of process, the top statements of
// pg_stat_statements (calls, time, rows, buffers and WAL per call) and the
// average number of active backends per wait event (sampled every 10ms);
// on the embedded cluster it adds pg_stat_statements to
// shared_preload_libraries (ALTER SYSTEM) and restarts the cluster if it must,
// so use a separate --state-dir for profiling runs.
//
// Every run stops itself: --run-timeout bounds each one.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"
)

// DefaultStateDir is the embedded cluster's state directory when neither
// --state-dir nor --database-url is given. /tmp is traversable by the
// server user when the benchmark runs as root.
const DefaultStateDir = "/tmp/agentbench-state"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentbench:", err)
		os.Exit(1)
	}
}

const usage = `agentbench measures the claim protocol on PostgreSQL.

Usage:
  agentbench throughput [flags]   burn-down throughput of pre-inserted no-op tasks
  agentbench latency [flags]      enqueue→start latency at a steady enqueue rate
  agentbench help [command]       show this text or a command's flags

Without --database-url (or DATABASE_URL) the embedded cluster in --state-dir
is used (default ` + DefaultStateDir + `, fsync on). Each run uses a fresh database.
Run "agentbench help throughput" or "agentbench help latency" for the flags.
`

// run is main without the process: it parses args and runs one command,
// writing results to out and diagnostics to errOut.
func run(ctx context.Context, args []string, out, errOut io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(errOut, usage)
		return errors.New("no command given")
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "throughput":
		return runThroughput(ctx, rest, out, errOut)
	case "latency":
		return runLatency(ctx, rest, out, errOut)
	case "help", "-h", "-help", "--help":
		if len(rest) > 0 && rest[0] != "help" {
			return run(ctx, []string{rest[0], "--help"}, out, errOut)
		}
		fmt.Fprint(out, usage)
		return flag.ErrHelp
	default:
		fmt.Fprint(errOut, usage)
		return fmt.Errorf("unknown command %q", cmd)
	}
}

// CommonFlags are the flags every command takes.
type CommonFlags struct {
	DatabaseURL string
	StateDir    string
	Reset       string
	CPUProfile  string
	PGStats     bool
	RunTimeout  time.Duration
	LogLevel    string
}

func (c *CommonFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.DatabaseURL, "database-url", os.Getenv("DATABASE_URL"),
		"PostgreSQL URL to benchmark against (default $DATABASE_URL; empty: the embedded cluster)")
	fs.StringVar(&c.StateDir, "state-dir", DefaultStateDir, "state directory of the embedded cluster")
	fs.StringVar(&c.Reset, "reset", "template",
		"how each run gets a fresh database: template (CREATE DATABASE from a migrated template) or "+
			"truncate (TRUNCATE tasks, task_attempts in the target database: destroys its tasks)")
	fs.StringVar(&c.CPUProfile, "cpuprofile", "", "write a pprof CPU profile of each measured phase to PREFIX-<run>.pprof")
	fs.BoolVar(&c.PGStats, "pg-stats", false,
		"report pg_stat_statements and wait-event samples per run (loads pg_stat_statements; may restart the embedded cluster)")
	fs.DurationVar(&c.RunTimeout, "run-timeout", 2*time.Minute, "upper bound of one run")
	fs.StringVar(&c.LogLevel, "log-level", "warn", "worker log level: debug, info, warn or error")
}

func (c *CommonFlags) check() error {
	if c.Reset != "template" && c.Reset != "truncate" {
		return fmt.Errorf("--reset must be template or truncate, not %q", c.Reset)
	}
	if c.RunTimeout <= 0 {
		return errors.New("--run-timeout must be positive")
	}
	return nil
}

// logger returns the workers' logger: text to w at the chosen level.
func (c *CommonFlags) logger(w io.Writer) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(c.LogLevel)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: lvl})), nil
}

// newFlagSet returns a flag set whose --help prints summary and the flags.
func newFlagSet(name, summary string, errOut io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(errOut)
	fs.Usage = func() {
		fmt.Fprintf(errOut, "Usage: agentbench %s [flags]\n\n%s\n\nFlags:\n", name, summary)
		fs.PrintDefaults()
	}
	return fs
}

// intList is a flag holding comma-separated positive integers.
type intList []int

func (l *intList) String() string {
	s := make([]string, len(*l))
	for i, v := range *l {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ",")
}

func (l *intList) Set(v string) error {
	var out intList
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, n)
	}
	*l = out
	return nil
}
