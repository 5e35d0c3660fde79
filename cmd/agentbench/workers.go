package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/daemon"
	"github.com/agentledger/agentledger/tools"
	"github.com/agentledger/agentledger/worker"
)

// Workers are the workers under test in one measured phase: worker pools in
// this process (PoolWorkers) or worker processes (ProcWorkers).
type Workers interface {
	// Start starts working.
	Start(ctx context.Context) error
	// AllHandled is closed when every task of the phase finished (its
	// outcome written).
	AllHandled() <-chan struct{}
	// Handled is how many tasks finished.
	Handled() int64
	// PIDs are the worker processes, whose CPU time counts as the
	// benchmark's; none for pools in this process.
	PIDs() []int
	// Stop stops the workers, waits for them and closes their
	// connections. It returns the peak resident set of the process that
	// ran them (of the largest, for several processes) during the phase;
	// 0 when unknown.
	Stop() (peakRSS int64, err error)
}

// handledCounter closes a channel when a count reaches its total.
type handledCounter struct {
	n     atomic.Int64
	total int64
	done  chan struct{}
	once  sync.Once
}

func newHandledCounter(total int) *handledCounter {
	return &handledCounter{total: int64(total), done: make(chan struct{})}
}

// add counts d finished tasks.
func (c *handledCounter) add(d int64) { c.set(c.n.Add(d)) }

// set notes that n tasks finished in all.
func (c *handledCounter) set(n int64) {
	if n >= c.total {
		c.once.Do(func() { close(c.done) })
	}
}

// handledCounter is the daemons' extra worker.Observer: a task counts once
// its attempt's outcome is written.
func (c *handledCounter) Claimed(string, int) {}
func (c *handledCounter) LeaseLost()          {}
func (c *handledCounter) Finished(string, agentledger.TaskState, time.Duration) {
	c.add(1)
}

// DaemonSpec completes the daemons under test beyond the queue settings:
// the kinds and tools they serve beside the built-in ones and, through
// Configure, the services they run (none by default: no API, cron, janitor
// or notifications, as a queue-only reference runs none).
type DaemonSpec struct {
	Kinds     map[string]worker.Handler
	Tools     []tools.Tool
	Configure func(*daemon.Config)
}

// PoolWorkers are embedded daemons (daemon.New) in this process, each on
// its own connection pool, as separate agentd processes would be.
type PoolWorkers struct {
	count  *handledCounter
	log    *slog.Logger
	gate   chan struct{} // closed by Start: the daemons begin to claim
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// Daemons are the daemons, in the order of their worker ids.
	Daemons []*daemon.Daemon
}

// PoolSpec says how to build the daemons.
type PoolSpec struct {
	Pools       int
	Concurrency int
	Batch       int
	MaxConns    int32 // per daemon
	Daemon      DaemonSpec
	Tasks       int // the phase ends when this many tasks finished
	Log         *slog.Logger
}

// NewPoolWorkers builds the daemons and returns once each has connected and
// is ready to claim; they claim from Start on.
func NewPoolWorkers(ctx context.Context, rdb *RunDB, s PoolSpec) (*PoolWorkers, error) {
	url, err := rdb.URL()
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	w := &PoolWorkers{count: newHandledCounter(s.Tasks), log: s.Log, gate: make(chan struct{}), cancel: cancel}
	built := make(chan error, s.Pools) // one value per daemon: ready, or why not
	for i := range s.Pools {
		cfg := daemon.Config{
			Database: daemon.Database{
				URL:       url,
				NoMigrate: true,
				MaxConns:  s.MaxConns,
			},
			Worker: daemon.Worker{
				ID:          fmt.Sprintf("bench-%d", i+1),
				Concurrency: s.Concurrency,
				BatchSize:   s.Batch,
			},
			Maintenance: daemon.Maintenance{NoCron: true, NoJanitor: true},
			Notify:      daemon.Notifications{NoDispatch: true},
			Hooks:       daemon.Hooks{Observer: w.count},
			Logger:      s.Log,
		}
		if s.Daemon.Configure != nil {
			s.Daemon.Configure(&cfg)
		}
		var reached atomic.Bool
		cfg.Hooks.BeforeRun = func(ctx context.Context, _ *pgxpool.Pool) error {
			reached.Store(true)
			built <- nil
			select {
			case <-w.gate:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		d, err := newDaemon(cfg, s.Daemon)
		if err != nil {
			w.Stop()
			return nil, err
		}
		w.Daemons = append(w.Daemons, d)
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			err := d.Run(runCtx)
			switch {
			case !reached.Load():
				built <- fmt.Errorf("daemon %s: %w", cfg.Worker.ID, err)
			case err != nil && runCtx.Err() == nil:
				w.log.Error("daemon stopped with an error", "worker", cfg.Worker.ID, "err", err)
			}
		}()
	}
	for range s.Pools {
		if err := <-built; err != nil {
			w.Stop()
			return nil, err
		}
	}
	resetPeakRSS() // the peak read at Stop is the phase's
	return w, nil
}

// newDaemon is daemon.New with spec's kinds and tools registered.
func newDaemon(cfg daemon.Config, spec DaemonSpec) (*daemon.Daemon, error) {
	d := daemon.New(cfg)
	for name, h := range spec.Kinds {
		if err := d.RegisterKind(name, h); err != nil {
			return nil, err
		}
	}
	for _, t := range spec.Tools {
		if err := d.RegisterTool(t); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// Start lets the daemons claim until Stop.
func (w *PoolWorkers) Start(context.Context) error {
	close(w.gate)
	return nil
}

// AllHandled is closed when every task finished.
func (w *PoolWorkers) AllHandled() <-chan struct{} { return w.count.done }

// Handled is how many tasks finished.
func (w *PoolWorkers) Handled() int64 { return w.count.n.Load() }

// PIDs is empty: the daemons run in this process.
func (w *PoolWorkers) PIDs() []int { return nil }

// Stop shuts the daemons down (their connections close with them); the
// peak RSS is this process's since Start.
func (w *PoolWorkers) Stop() (int64, error) {
	w.cancel()
	w.wg.Wait()
	return peakRSS("self"), nil
}
