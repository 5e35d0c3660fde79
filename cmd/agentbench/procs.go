package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger/daemon"
)

// Worker processes: "throughput --processes N" re-executes this binary as
// N "agentbench worker" processes, each running one worker.Pool with the
// no-op handler, as N agentd daemons would (without agentd's HTTP server,
// scheduler, janitor and dispatcher, which are idle in a burn-down).
//
// The protocol, one line at a time: the parent passes the run database's
// URL in DATABASE_URL (never on the command line); the child connects and
// prints "ready", waits for "go" on its standard input, then works and
// prints "handled N" (its handler calls so far) every 10ms while the count
// changes. When its standard input closes it shuts down gracefully and
// prints "done {json}" with its peak resident set, then exits.

// childEnv marks a test binary re-executed as a worker process: its
// TestMain runs the command instead of the tests.
const childEnv = "AGENTBENCH_CHILD"

// childReport is the child's last line.
type childReport struct {
	Handled int64 `json:"handled"`
	PeakRSS int64 `json:"peak_rss"` // bytes
}

// proc is one running worker process, seen from the parent.
type proc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	ready  chan struct{}
	exited chan struct{} // its standard output reached EOF
	final  childReport
	gotEnd bool
}

// ProcWorkers are worker processes, one worker.Pool each.
type ProcWorkers struct {
	procs []*proc
	count *handledCounter
	mu    sync.Mutex
	byPID map[int]int64 // handled per process
}

// ProcSpec says how to start worker processes.
type ProcSpec struct {
	Procs       int
	Concurrency int
	Batch       int
	MaxConns    int32 // per process
	Tasks       int
	LogLevel    string
	ErrOut      io.Writer // the children's standard error
}

// StartProcWorkers starts the processes and waits until each is connected
// and ready; they start working at Start.
func StartProcWorkers(ctx context.Context, rdb *RunDB, s ProcSpec) (*ProcWorkers, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding this program to start worker processes: %w", err)
	}
	dbURL, err := rdb.URL()
	if err != nil {
		return nil, err
	}
	w := &ProcWorkers{count: newHandledCounter(s.Tasks), byPID: map[int]int64{}}
	for i := range s.Procs {
		cmd := exec.Command(exe, "worker", "--id", fmt.Sprintf("bench-proc-%d", i+1),
			"--concurrency", strconv.Itoa(s.Concurrency), "--batch", strconv.Itoa(s.Batch),
			"--max-conns", strconv.Itoa(int(s.MaxConns)), "--log-level", s.LogLevel)
		cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL, childEnv+"=1")
		cmd.Stderr = s.ErrOut // a child whose parent died sees its standard input close, and stops
		stdin, err := cmd.StdinPipe()
		if err != nil {
			w.kill()
			return nil, err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			w.kill()
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			w.kill()
			return nil, fmt.Errorf("starting worker process: %w", err)
		}
		p := &proc{cmd: cmd, stdin: stdin, ready: make(chan struct{}), exited: make(chan struct{})}
		w.procs = append(w.procs, p)
		go w.read(p, stdout)
	}
	timeout := time.After(30 * time.Second)
	for _, p := range w.procs {
		select {
		case <-p.ready:
		case <-p.exited:
			w.kill()
			return nil, fmt.Errorf("worker process %d exited before it was ready (its errors are above)", p.cmd.Process.Pid)
		case <-timeout:
			w.kill()
			return nil, errors.New("worker processes not ready after 30s")
		case <-ctx.Done():
			w.kill()
			return nil, ctx.Err()
		}
	}
	return w, nil
}

// read follows a child's standard output.
func (w *ProcWorkers) read(p *proc, r io.Reader) {
	defer close(p.exited)
	sc := bufio.NewScanner(r)
	ready := false
	for sc.Scan() {
		l := sc.Text()
		switch {
		case l == "ready" && !ready:
			ready = true
			close(p.ready)
		case strings.HasPrefix(l, "handled "):
			n, _ := strconv.ParseInt(strings.TrimPrefix(l, "handled "), 10, 64)
			w.note(p.cmd.Process.Pid, n)
		case strings.HasPrefix(l, "done "):
			if json.Unmarshal([]byte(strings.TrimPrefix(l, "done ")), &p.final) == nil {
				p.gotEnd = true
				w.note(p.cmd.Process.Pid, p.final.Handled)
			}
		}
	}
	_, _ = io.Copy(io.Discard, r)
}

// note records that process pid handled n tasks so far.
func (w *ProcWorkers) note(pid int, n int64) {
	w.mu.Lock()
	w.byPID[pid] = n
	var sum int64
	for _, v := range w.byPID {
		sum += v
	}
	w.mu.Unlock()
	w.count.n.Store(sum)
	w.count.set(sum)
}

// Start tells every process to start working.
func (w *ProcWorkers) Start(context.Context) error {
	for _, p := range w.procs {
		if _, err := io.WriteString(p.stdin, "go\n"); err != nil {
			return fmt.Errorf("starting worker process %d: %w", p.cmd.Process.Pid, err)
		}
	}
	return nil
}

// AllHandled is closed when the processes together handled every task.
func (w *ProcWorkers) AllHandled() <-chan struct{} { return w.count.done }

// Handled is how many tasks the processes reported handled.
func (w *ProcWorkers) Handled() int64 { return w.count.n.Load() }

// PIDs are the worker processes.
func (w *ProcWorkers) PIDs() []int {
	pids := make([]int, len(w.procs))
	for i, p := range w.procs {
		pids[i] = p.cmd.Process.Pid
	}
	return pids
}

// Stop closes the processes' standard input, waits (up to 30s) for them to
// shut down and returns the largest peak resident set among them.
func (w *ProcWorkers) Stop() (int64, error) {
	for _, p := range w.procs {
		p.stdin.Close()
	}
	var most int64
	var errs []error
	timeout := time.After(30 * time.Second)
	for _, p := range w.procs {
		select {
		case <-p.exited:
		case <-timeout:
			w.kill()
			<-p.exited
		}
		err := p.cmd.Wait()
		rss := p.final.PeakRSS
		if rss == 0 && p.cmd.ProcessState != nil {
			if ru, ok := p.cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
				rss = ru.Maxrss << 10 // kilobytes on Linux
			}
		}
		most = max(most, rss)
		if err != nil || !p.gotEnd {
			errs = append(errs, fmt.Errorf("worker process %d: %v (its errors are above)", p.cmd.Process.Pid, err))
		}
	}
	return most, errors.Join(errs...)
}

// kill ends every started process at once.
func (w *ProcWorkers) kill() {
	for _, p := range w.procs {
		_ = p.cmd.Process.Kill()
	}
}

// errGaveUp: the parent closed standard input instead of saying go.
var errGaveUp = errors.New("the parent gave up before go")

// runWorker is the "worker" command: one worker process of throughput
// --processes (see the protocol above). It reads commands on standard input.
// The process is the embedded daemon with only its worker pool running.
func runWorker(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := newFlagSet("worker", "Internal: a worker process of \"throughput --processes\" (reads DATABASE_URL; "+
		"prints ready, waits for go on standard input, works until standard input closes).", errOut)
	var (
		id, level          string
		conc, batch, conns int
	)
	fs.StringVar(&id, "id", "bench-proc", "worker id")
	fs.IntVar(&conc, "concurrency", 100, "pool concurrency")
	fs.IntVar(&batch, "batch", 100, "claim batch size")
	fs.IntVar(&conns, "max-conns", 8, "connection pool size")
	fs.StringVar(&level, "log-level", "warn", "log level")
	if err := fs.Parse(args); err != nil {
		return err
	}
	log, err := (&CommonFlags{LogLevel: level}).logger(errOut)
	if err != nil {
		return err
	}
	count := newHandledCounter(1 << 62)
	in := bufio.NewScanner(os.Stdin)
	// The daemon connects, then says ready and waits for go before its
	// first claim.
	d := daemon.New(daemon.Config{
		Database: daemon.Database{
			URL:       os.Getenv("DATABASE_URL"),
			NoMigrate: true,
			MaxConns:  int32(conns),
		},
		Worker: daemon.Worker{
			ID:          id,
			Concurrency: conc,
			BatchSize:   batch,
		},
		Maintenance: daemon.Maintenance{NoCron: true, NoJanitor: true},
		Notify:      daemon.Notifications{NoDispatch: true},
		Hooks: daemon.Hooks{Observer: count, BeforeRun: func(context.Context, *pgxpool.Pool) error {
			fmt.Fprintln(out, "ready")
			if !in.Scan() || in.Text() != "go" {
				return errGaveUp
			}
			return nil
		}},
		Logger: log,
	})
	runCtx, stop := context.WithCancel(ctx)
	poolDone := make(chan error, 1)
	go func() { poolDone <- d.Run(runCtx) }()
	select {
	case <-d.Ready():
	case err := <-poolDone:
		stop()
		if errors.Is(err, errGaveUp) {
			return nil
		}
		return err
	}
	stopReports := make(chan struct{})
	reported := make(chan struct{})
	go func() {
		defer close(reported)
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		var last int64
		for {
			select {
			case <-stopReports:
				return
			case <-t.C:
			}
			if n := count.n.Load(); n != last {
				last = n
				fmt.Fprintf(out, "handled %d\n", n)
			}
		}
	}()
	stdinClosed := make(chan struct{})
	go func() {
		for in.Scan() {
		}
		close(stdinClosed)
	}()
	select {
	case <-stdinClosed:
	case <-ctx.Done():
	}
	stop()
	if err := <-poolDone; err != nil {
		log.Error("daemon stopped with an error", "err", err)
	}
	close(stopReports)
	<-reported
	b, _ := json.Marshal(childReport{Handled: count.n.Load(), PeakRSS: peakRSS("self")})
	fmt.Fprintf(out, "done %s\n", b)
	return nil
}
