package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/tools"
	"github.com/agentledger/agentledger/worker"
)

// Workers are the workers under test in one measured phase: worker pools in
// this process (PoolWorkers) or worker processes (ProcWorkers).
type Workers interface {
	// Start starts working.
	Start(ctx context.Context) error
	// AllHandled is closed when the handlers have returned for every task
	// of the phase.
	AllHandled() <-chan struct{}
	// Handled is how many handler calls returned.
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

// add counts d handler calls.
func (c *handledCounter) add(d int64) { c.set(c.n.Add(d)) }

// set notes that n calls returned in all.
func (c *handledCounter) set(n int64) {
	if n >= c.total {
		c.once.Do(func() { close(c.done) })
	}
}

// counted wraps h so that every return is counted.
func (c *handledCounter) counted(h worker.Handler) worker.Handler {
	return worker.HandlerFunc(func(ctx context.Context, t *agentledger.Task) (json.RawMessage, error) {
		res, err := h.Work(ctx, t)
		c.add(1)
		return res, err
	})
}

// HandlersFunc builds the handlers of one worker pool, over the pool's
// own connections (agentd's handlers share its pool).
type HandlersFunc func(db *pgxpool.Pool) map[string]worker.Handler

// noopHandlers are the handlers of the no-op benchmarks: tools.Noop, the
// "noop" kind of agentd.
func noopHandlers(*pgxpool.Pool) map[string]worker.Handler {
	return map[string]worker.Handler{"noop": worker.HandlerFunc(tools.Noop)}
}

// PoolWorkers are worker.Pool instances in this process, each on its own
// connection pool, as separate daemons would be.
type PoolWorkers struct {
	pools  []*worker.Pool
	conns  []*pgxpool.Pool
	count  *handledCounter
	log    *slog.Logger
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// PoolSpec says how to build worker pools.
type PoolSpec struct {
	Pools       int
	Concurrency int
	Batch       int
	MaxConns    int32 // per pool
	Handlers    HandlersFunc
	Tasks       int // the phase ends when the handlers returned this many times
	Log         *slog.Logger
}

// NewPoolWorkers builds the pools; they start working at Start.
func NewPoolWorkers(ctx context.Context, rdb *RunDB, s PoolSpec) (*PoolWorkers, error) {
	w := &PoolWorkers{count: newHandledCounter(s.Tasks), log: s.Log}
	for i := range s.Pools {
		db, err := rdb.DaemonPool(ctx, s.MaxConns)
		if err != nil {
			w.closeConns()
			return nil, err
		}
		w.conns = append(w.conns, db)
		handlers := map[string]worker.Handler{}
		for k, h := range s.Handlers(db) {
			handlers[k] = w.count.counted(h)
		}
		p, err := worker.New(db, worker.Config{
			ID:          fmt.Sprintf("bench-%d", i+1),
			Concurrency: s.Concurrency,
			BatchSize:   s.Batch,
			Handlers:    handlers,
			Logger:      s.Log,
		})
		if err != nil {
			w.closeConns()
			return nil, err
		}
		w.pools = append(w.pools, p)
	}
	resetPeakRSS() // the peak read at Stop is the phase's
	return w, nil
}

// Start runs the pools until Stop.
func (w *PoolWorkers) Start(ctx context.Context) error {
	runCtx, cancel := context.WithCancel(ctx)
	w.cancel = cancel
	for _, p := range w.pools {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			if err := p.Run(runCtx); err != nil {
				w.log.Error("pool stopped with an error", "err", err)
			}
		}()
	}
	return nil
}

// AllHandled is closed when every task was handled.
func (w *PoolWorkers) AllHandled() <-chan struct{} { return w.count.done }

// Handled is how many handler calls returned.
func (w *PoolWorkers) Handled() int64 { return w.count.n.Load() }

// PIDs is empty: the pools run in this process.
func (w *PoolWorkers) PIDs() []int { return nil }

// Stop shuts the pools down and closes their connections; the peak RSS is
// this process's since Start.
func (w *PoolWorkers) Stop() (int64, error) {
	if w.cancel != nil {
		w.cancel()
	}
	w.wg.Wait()
	rss := peakRSS("self")
	w.closeConns()
	return rss, nil
}

func (w *PoolWorkers) closeConns() {
	for _, c := range w.conns {
		c.Close()
	}
	w.conns = nil
}
