package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// agentdBinary returns the agentd to run: path if given, else one built
// from this repository's source into dir (the module is found from the
// working directory upwards, as go run finds it).
func agentdBinary(ctx context.Context, path, dir string) (string, error) {
	if path != "" {
		p, err := exec.LookPath(path)
		if err != nil {
			return "", fmt.Errorf("--agentd: %w", err)
		}
		return filepath.Abs(p)
	}
	root, err := productRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "agentd")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/agentd")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building agentd (or give --agentd PATH): %v\n%s", err, out)
	}
	return bin, nil
}

// productRoot finds the directory of the product's go.mod from the working
// directory upwards.
func productRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(b, []byte("module github.com/agentledger/agentledger\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("cannot build agentd: the agentledger source is not in the working directory or above it; give --agentd PATH")
		}
		dir = parent
	}
}

// fleetApp is the application_name of daemon i (from 1): pg_stat_activity
// and PgBouncer's SHOW CLIENTS tell the daemons apart by it.
func fleetApp(i int) string { return fmt.Sprintf("agentd-fleet-%d", i) }

// fleetAppPrefix starts every daemon's application_name.
const fleetAppPrefix = "agentd-fleet-"

// FleetSpec says how to start the daemons of one case.
type FleetSpec struct {
	Bin          string
	Daemons      int
	Procs        int // each daemon's GOMAXPROCS; 0: the environment's
	Concurrency  int // per daemon
	Batch        int
	MaxConns     int // per daemon
	PollInterval time.Duration
	PgBouncer    bool // the URLs point at PgBouncer: agentd --pgbouncer
	Prepared     bool // … which keeps prepared statements: agentd --pgbouncer-prepared
	URL          func(app string) (string, error)
	Dir          string // the daemons' state directory (notification file)
	LogLevel     string
}

// Fleet is a set of running agentd processes.
type Fleet struct {
	spec  FleetSpec
	env   []string
	procs []*daemonProc
}

type daemonProc struct {
	app    string
	cmd    *exec.Cmd
	log    *daemonLog
	exited chan struct{}
	err    error // of Wait, once exited is closed
}

// NewFleet returns a fleet of s.Daemons daemons, none started yet.
func NewFleet(s FleetSpec) *Fleet { return &Fleet{spec: s, env: agentdEnv()} }

// Size is how many daemons the fleet has when all are started.
func (f *Fleet) Size() int { return f.spec.Daemons }

// StartNext starts the next daemon; it gets its URL in DATABASE_URL, never
// on its command line.
func (f *Fleet) StartNext() error {
	s := f.spec
	app := fleetApp(len(f.procs) + 1)
	u, err := s.URL(app)
	if err != nil {
		return err
	}
	args := []string{"--worker-id", app, "--no-migrate",
		"--concurrency", strconv.Itoa(s.Concurrency), "--batch-size", strconv.Itoa(s.Batch),
		"--max-conns", strconv.Itoa(s.MaxConns), "--poll-interval", s.PollInterval.String(),
		// Nothing but the worker pool: no HTTP server, no schedules,
		// janitor or notification delivery, no model.
		"--listen=", "--no-cron", "--no-janitor", "--no-dispatch",
		"--state-dir", s.Dir, "--notify-file", filepath.Join(s.Dir, app+"-notifications.jsonl"),
		"--log-level", s.LogLevel}
	if s.PgBouncer {
		// --poll-only too: agentd's --pgbouncer alone does not turn
		// LISTEN off (its poll-only flag's default overrides it).
		args = append(args, "--pgbouncer", "--poll-only")
		if s.Prepared {
			args = append(args, "--pgbouncer-prepared")
		}
	}
	cmd := exec.Command(s.Bin, args...)
	cmd.Env = append(slices.Clip(f.env), "DATABASE_URL="+u)
	if s.Procs > 0 {
		cmd.Env = append(cmd.Env, "GOMAXPROCS="+strconv.Itoa(s.Procs))
	}
	// A daemon whose parent died shuts down as it would at SIGTERM.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	p := &daemonProc{app: app, cmd: cmd, log: &daemonLog{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.log, p.log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting agentd: %w", err)
	}
	go func() { p.err = cmd.Wait(); close(p.exited) }()
	f.procs = append(f.procs, p)
	return nil
}

// agentdEnv is this process's environment without agentd's settings, so
// that only the benchmark's flags configure the daemons.
func agentdEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "AGENTLEDGER_") || strings.HasPrefix(kv, "DATABASE_URL=") ||
			strings.HasPrefix(kv, "OTEL_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// Exited returns an error naming a daemon that has exited, or nil.
func (f *Fleet) Exited() error {
	for _, p := range f.procs {
		select {
		case <-p.exited:
			return fmt.Errorf("agentd %s exited: %v\n%s", p.app, p.err, p.log.tail())
		default:
		}
	}
	return nil
}

// PIDs are the daemons' processes.
func (f *Fleet) PIDs() []int {
	pids := make([]int, len(f.procs))
	for i, p := range f.procs {
		pids[i] = p.cmd.Process.Pid
	}
	return pids
}

// CPU is the daemons' CPU time so far (user and system, from /proc).
func (f *Fleet) CPU() time.Duration {
	var t time.Duration
	for _, pid := range f.PIDs() {
		if st, ok := readProcStat(pid); ok {
			t += st.self
		}
	}
	return t
}

// Stop sends SIGTERM to every daemon (a graceful shutdown), waits up to
// 30s for them, kills the rest, and reports any that did not exit cleanly.
func (f *Fleet) Stop() error {
	for _, p := range f.procs {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	timeout := time.After(30 * time.Second)
	var errs []error
	for _, p := range f.procs {
		select {
		case <-p.exited:
		case <-timeout:
			f.kill()
			<-p.exited
		}
		if p.err != nil {
			errs = append(errs, fmt.Errorf("agentd %s: %v\n%s", p.app, p.err, p.log.tail()))
		}
	}
	return errors.Join(errs...)
}

// Tails returns the last lines each daemon logged, if any.
func (f *Fleet) Tails() string {
	var b strings.Builder
	for _, p := range f.procs {
		if t := strings.TrimSpace(p.log.tail()); t != "" {
			fmt.Fprintf(&b, "agentd %s:\n%s\n", p.app, t)
		}
	}
	return b.String()
}

// kill ends every started daemon at once.
func (f *Fleet) kill() {
	for _, p := range f.procs {
		_ = p.cmd.Process.Kill()
	}
}

// Conflicts counts the daemons' log lines that report a serialization
// failure, a deadlock or a lock timeout.
func (f *Fleet) Conflicts() int {
	n := 0
	for _, p := range f.procs {
		n += p.log.conflicts()
	}
	return n
}

// conflictMarks are what a log line reporting a serialization failure
// (40001), a deadlock (40P01) or a lock timeout (55P03) contains.
var conflictMarks = []string{"40001", "40P01", "55P03", "could not serialize", "deadlock detected", "lock timeout"}

// daemonLog is a daemon's output: its tail is kept for errors, and lines
// reporting conflicts are counted.
type daemonLog struct {
	mu      sync.Mutex
	partial []byte
	last    []string
	nConfl  int
}

func (l *daemonLog) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, b...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		line := string(l.partial[:i])
		l.partial = l.partial[i+1:]
		for _, m := range conflictMarks {
			if strings.Contains(line, m) {
				l.nConfl++
				break
			}
		}
		l.last = append(l.last, line)
		if len(l.last) > 20 {
			l.last = l.last[1:]
		}
	}
	return len(b), nil
}

func (l *daemonLog) tail() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(append(l.last, string(l.partial)), "\n")
}

func (l *daemonLog) conflicts() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.nConfl
}
