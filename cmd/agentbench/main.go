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
	"sync"
	"syscall"
	"time"
)

// DefaultStateDir is the embedded cluster's state directory when neither
// --state-dir nor --database-url is given. /tmp is traversable by the
// server user when the benchmark runs as root.
const DefaultStateDir = "/tmp/agentbench-state"

func main() { os.Exit(mainCode()) }

// mainCode runs the command line and returns the exit code. A test binary
// re-executed as a worker process (see childEnv) runs it too.
func mainCode() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentbench:", err)
		return 1
	}
	return 0
}

const usage = `agentbench measures the claim protocol and the ledger on PostgreSQL.

Usage:
  agentbench throughput [flags]     burn-down throughput of pre-inserted no-op tasks, with
                                    worker pools in this process or --processes N worker processes
  agentbench latency [flags]        enqueue→start latency at a steady enqueue rate
  agentbench river [flags]          throughput's burn-down with River (riverqueue/river ` + riverVersion + `)
  agentbench river-latency [flags]  latency's measurement with River
  agentbench river-effects [flags]  effects' workload with River and a hand-written idempotency
                                    table; --complete batched|tx
  agentbench effects [flags]        steps tasks of N keyed HTTP effects: tasks/s, effects/s,
                                    transactions per effect; --replay: ledger hits/s
  agentbench approvals [flags]      approval decision → effect start: p50/p99 of the time from
                                    a decision's commit to its gated call reaching the downstream
  agentbench signals [flags]        signal → resume: p50/p99 of the time from waits.Store.Send returning to the
                                    woken task's next step (a keyed POST) reaching the downstream, N tasks waiting
  agentbench timers [flags]         timer lateness: p50/p99 of (resumed − due) of durable timers (wait_timer)
                                    coming due at a steady rate
  agentbench growth [flags]         claim latency and burn-down with --finished N old tasks;
                                    ledger.Do and Find with --ledger-rows N old effects
  agentbench sustained [flags]      a steady enqueue rate for minutes, with the janitor and cron
                                    running: throughput and latency per window, --csv, --chart
  agentbench longday [flags]        a day's mixed work against agentd as its own process: throughput, p50/p99,
                                    agentd's RSS and goroutines, table sizes per window; CSV, charts, a verdict
  agentbench fairshare [flags]      fair share between tenants: the claim's cost at N tenants;
                                    a new tenant's wait and each backlog tenant's starts among N tenants
  agentbench fleet [flags]          N agentd processes on one database, directly and through PgBouncer,
                                    against one at the same total concurrency: tasks/s, wait events, connections
  agentbench help [command]         show this text or a command's flags

Without --database-url (or DATABASE_URL) the embedded cluster in --state-dir
is used (default ` + DefaultStateDir + `, fsync on). Each run uses a fresh database.
Throughput-like tables report peak RSS of the worker process(es) (rss MB) and the
most worker connections seen (conns). The package documentation (go doc
./cmd/agentbench) says how each command measures. Run "agentbench help COMMAND"
for its flags.
`

// run is main without the process: it parses args and runs one command,
// writing results to out and diagnostics to errOut.
func run(ctx context.Context, args []string, out, errOut io.Writer) error {
	errOut = &syncWriter{w: errOut} // progress, logs and worker processes' errors interleave
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
	case "river":
		return runRiver(ctx, rest, out, errOut)
	case "river-latency":
		return runRiverLatency(ctx, rest, out, errOut)
	case "river-effects":
		return runRiverEffects(ctx, rest, out, errOut)
	case "effects":
		return runEffects(ctx, rest, out, errOut)
	case "approvals":
		return runApprovals(ctx, rest, out, errOut)
	case "signals":
		return runSignals(ctx, rest, out, errOut)
	case "timers":
		return runTimers(ctx, rest, out, errOut)
	case "growth":
		return runGrowth(ctx, rest, out, errOut)
	case "sustained":
		return runSustained(ctx, rest, out, errOut)
	case "longday":
		return runLongday(ctx, rest, out, errOut)
	case "fairshare":
		return runFairShare(ctx, rest, out, errOut)
	case "fleet":
		return runFleet(ctx, rest, out, errOut)
	case "worker":
		return runWorker(ctx, rest, out, errOut)
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
			"truncate (TRUNCATE "+truncated+" in the target database: destroys its tasks)")
	fs.StringVar(&c.CPUProfile, "cpuprofile", "", "write a pprof CPU profile of each measured phase to PREFIX-<run>.pprof")
	fs.BoolVar(&c.PGStats, "pg-stats", false,
		"report pg_stat_statements and wait-event samples per run (loads pg_stat_statements; may restart the embedded cluster)")
	fs.DurationVar(&c.RunTimeout, "run-timeout", 2*time.Minute, "upper bound of one run")
	fs.StringVar(&c.LogLevel, "log-level", "warn", "worker log level: debug, info, warn or error")
}

// open returns a command's logger and the server it benchmarks (close
// it when done).
func (c *CommonFlags) open(ctx context.Context, errOut io.Writer) (*Server, *slog.Logger, error) {
	log, err := c.logger(errOut)
	if err != nil {
		return nil, nil, err
	}
	srv, err := openServer(ctx, *c)
	if err != nil {
		return nil, nil, err
	}
	return srv, log, nil
}

// parseFlags parses a command's arguments, which must all be flags, and
// checks the common ones.
func parseFlags(fs *flag.FlagSet, args []string, c *CommonFlags) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %v", fs.Args())
	}
	return c.check()
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

// syncWriter serialises writes to w.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
