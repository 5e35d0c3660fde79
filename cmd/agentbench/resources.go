package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// resetPeakRSS sets this process's peak resident set (VmHWM) to its current
// size after a garbage collection, so that the peak read at the end of a
// measured phase belongs to that phase and not to an earlier run or the
// insert phase. It reports whether the kernel allowed it.
func resetPeakRSS() bool {
	runtime.GC()
	debug.FreeOSMemory()
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

// peakRSS returns the peak resident set (VmHWM) of process pid ("self" for
// this one) in bytes; 0 when unknown.
func peakRSS(pid string) int64 {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			f := strings.Fields(v) // "123456 kB"
			if len(f) == 2 && f[1] == "kB" {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n << 10
			}
		}
	}
	return 0
}

// mb formats bytes as MiB; "?" for 0 (unknown).
func mb(n int64) string {
	if n <= 0 {
		return "?"
	}
	return strconv.FormatFloat(float64(n)/(1<<20), 'f', 0, 64)
}

// ConnSampler counts, every 50ms, the connections of the workers under test
// (application_name WorkerApp) to the run's database, and keeps the most
// seen.
type ConnSampler struct {
	most atomic.Int64
	stop chan struct{}
	done chan struct{}
}

// connCountSQL counts the workers' connections to the current database.
const connCountSQL = `SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND application_name = $1`

// StartConnSampler samples through pool until Stop.
func StartConnSampler(ctx context.Context, pool *pgxpool.Pool) *ConnSampler {
	s := &ConnSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			var n int64
			if err := pool.QueryRow(ctx, connCountSQL, WorkerApp).Scan(&n); err == nil && n > s.most.Load() {
				s.most.Store(n)
			}
			select {
			case <-s.stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// Stop ends the sampling and returns the most connections seen.
func (s *ConnSampler) Stop() int64 {
	close(s.stop)
	<-s.done
	return s.most.Load()
}

// waitDisconnected waits (up to 5s) until the workers' connections to the
// run's database are gone, so that their backends have exited and flushed
// their statistics.
func waitDisconnected(ctx context.Context, pool *pgxpool.Pool) {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		var n int64
		if err := pool.QueryRow(ctx, connCountSQL, WorkerApp).Scan(&n); err != nil || n == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// queryCounter is a pgx tracer that counts the queries sent through a
// pool: the benchmark's own transactions, which pg_stat_database counts
// with the workers'.
type queryCounter struct{ n atomic.Int64 }

func (c *queryCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (c *queryCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TxCounts are transaction counters of the server at one moment.
type TxCounts struct {
	// Commits is pg_stat_database.xact_commit of the run's database: every
	// committed transaction, read-only ones included.
	Commits int64
	// XIDs is the next transaction id: its difference counts the
	// transactions that wrote (only those are assigned an id), in every
	// database of the server.
	XIDs int64
	// Own is how many queries the control pool had sent; Reader how many
	// the reading connection sent (each query is one transaction).
	Own, Reader int64
}

// TxMeter reads TxCounts, with a control pool whose queries it counts so
// that they can be taken out.
type TxMeter struct {
	pool    *pgxpool.Pool
	counter *queryCounter
	conn    *pgx.ConnConfig // the reading connection's settings
}

// controlApp is the application_name of the benchmark's control
// connections.
const controlApp = "agentbench-control"

// NewTxMeter opens a control pool of two connections to the run's
// database that counts its queries.
func NewTxMeter(ctx context.Context, rdb *RunDB) (*TxMeter, error) {
	cfg := rdb.s.poolConfig(rdb.name, 2, controlApp)
	reader := cfg.ConnConfig.Copy()
	reader.RuntimeParams["application_name"] = "agentbench-reader"
	c := &queryCounter{}
	cfg.ConnConfig.Tracer = c
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &TxMeter{pool: pool, counter: c, conn: reader}, nil
}

// Pool is the counted control pool: use it for everything the benchmark
// queries between two readings.
func (m *TxMeter) Pool() *pgxpool.Pool { return m.pool }

// Close closes the control pool.
func (m *TxMeter) Close() { m.pool.Close() }

// Read returns the counters now. A backend's statistics reach
// pg_stat_database when it has been idle for a while (up to 10s) or exits,
// so Read closes the control pool's connections and reads on a connection
// of its own, and the workers' connections must be closed before (see
// waitDisconnected).
func (m *TxMeter) Read(ctx context.Context) (TxCounts, error) {
	var c TxCounts
	m.pool.Reset() // idle connections close now; the pool opens new ones
	conn, err := pgx.ConnectConfig(ctx, m.conn)
	if err != nil {
		return c, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		var n int64
		c.Reader++
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND application_name = $1`, controlApp).Scan(&n); err != nil {
			return c, err
		}
		if n == 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // a backend leaves pg_stat_activity just before it flushes
	c.Own = m.counter.n.Load()
	c.Reader++
	err = conn.QueryRow(ctx, `
SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()),
	pg_snapshot_xmax(pg_current_snapshot())::text::bigint`).Scan(&c.Commits, &c.XIDs)
	if err != nil {
		return c, fmt.Errorf("reading transaction counters: %w", err)
	}
	return c, nil
}

// TxDelta is what the workers committed between two readings.
type TxDelta struct {
	Commits int64 // transactions of the run's database, read-only ones included
	Writes  int64 // transactions that wrote (server-wide)
}

// Sub returns the workers' transactions between a (earlier) and b. The
// benchmark's own are taken out: the control pool's queries between the
// readings and those of a's reading connection, which it flushed when it
// closed (b's had not flushed when b was read).
func (b TxCounts) Sub(a TxCounts) TxDelta {
	return TxDelta{Commits: b.Commits - a.Commits - (b.Own - a.Own) - a.Reader, Writes: b.XIDs - a.XIDs}
}
