package metrics

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/approvals"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/notify/outbox"
	"github.com/agentledger/agentledger/waits"
)

// DB is what metrics needs of a database: a pool, a connection or a
// transaction (pgx's own types satisfy it).
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Begin(ctx context.Context) (pgx.Tx, error)
}

// DB gauges are read at scrape time, at most once per cacheFor: a count over
// a large tasks table is not free.
const cacheFor = 10 * time.Second

var (
	tasksDesc   = prometheus.NewDesc(ns+"_tasks", "Tasks by state (all tenants).", []string{"state"}, nil)
	pendingDesc = prometheus.NewDesc(ns+"_outbox_pending", "Outbox events not yet delivered.", nil, nil)
	lagDesc     = prometheus.NewDesc(ns+"_outbox_lag_seconds", "Age of the oldest due, undelivered outbox event.", nil, nil)
	unknownDesc = prometheus.NewDesc(ns+"_ledger_unknown_effects", "Effects of unknown outcome waiting for an operator.", nil, nil)
	upDesc      = prometheus.NewDesc(ns+"_database_up", "Whether the last read of the database gauges succeeded.", nil, nil)
	askedDesc   = prometheus.NewDesc(ns+"_approvals_pending", "Approval requests waiting for a decision.", nil, nil)
	askedAge    = prometheus.NewDesc(ns+"_approvals_oldest_pending_seconds", "Age of the oldest approval request waiting for a decision.", nil, nil)
	waitsDesc   = prometheus.NewDesc(ns+"_waits", "Durable waits waiting, by kind (signal, timer, children).", []string{"kind"}, nil)
	signalsDesc = prometheus.NewDesc(ns+"_signals_pending", "Signals sent that no wait has consumed yet (kept until they expire).", nil, nil)
)

// dbCollector reads the database gauges, each from the package that owns
// its table.
type dbCollector struct {
	tasks  *claims.Store
	events *outbox.Store
	ledger *ledger.Ledger
	asked  *approvals.Store
	waits  *waits.Store

	mu     sync.Mutex
	at     time.Time
	values gauges
	up     bool
}

// gauges are the values read at one scrape.
type gauges struct {
	tasks   map[agentledger.TaskState]int64
	pending int64
	lag     time.Duration
	unknown int64
	asked   int64
	oldest  time.Duration
	waiting map[string]int64
	signals int64
}

// WatchDatabase adds the gauges read from db.
func (m *Metrics) WatchDatabase(db DB) {
	m.Registry.MustRegister(&dbCollector{tasks: claims.New(db), events: outbox.NewStore(db), ledger: ledger.New(db),
		asked: approvals.NewStore(db), waits: waits.NewStore(db)})
}

func (c *dbCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{tasksDesc, pendingDesc, lagDesc, unknownDesc, upDesc, askedDesc, askedAge, waitsDesc, signalsDesc} {
		ch <- d
	}
}

func (c *dbCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.at) >= cacheFor {
		c.at = time.Now()
		c.values, c.up = c.read()
	}
	up := 0.0
	if c.up {
		up = 1
	}
	ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, up)
	if !c.up {
		return
	}
	for st, n := range c.values.tasks {
		ch <- prometheus.MustNewConstMetric(tasksDesc, prometheus.GaugeValue, float64(n), string(st))
	}
	ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, float64(c.values.pending))
	ch <- prometheus.MustNewConstMetric(lagDesc, prometheus.GaugeValue, c.values.lag.Seconds())
	ch <- prometheus.MustNewConstMetric(unknownDesc, prometheus.GaugeValue, float64(c.values.unknown))
	ch <- prometheus.MustNewConstMetric(askedDesc, prometheus.GaugeValue, float64(c.values.asked))
	ch <- prometheus.MustNewConstMetric(askedAge, prometheus.GaugeValue, c.values.oldest.Seconds())
	for kind, n := range c.values.waiting {
		ch <- prometheus.MustNewConstMetric(waitsDesc, prometheus.GaugeValue, float64(n), kind)
	}
	ch <- prometheus.MustNewConstMetric(signalsDesc, prometheus.GaugeValue, float64(c.values.signals))
}

func (c *dbCollector) read() (gauges, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var g gauges
	var err error
	if g.tasks, err = c.tasks.Count(ctx, claims.ListParams{}); err != nil {
		return g, false
	}
	if g.pending, g.lag, err = c.events.Backlog(ctx); err != nil {
		return g, false
	}
	if g.unknown, err = c.ledger.UnknownCount(ctx); err != nil {
		return g, false
	}
	if g.asked, g.oldest, err = c.asked.Backlog(ctx); err != nil {
		return g, false
	}
	if g.waiting, g.signals, err = c.waits.Backlog(ctx); err != nil {
		return g, false
	}
	return g, true
}
