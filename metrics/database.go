package metrics

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/pgplan"
)

// stateSQL reads the gauges in one round trip: tasks by state, pending
// outbox events and the age of the oldest due one, and effects of unknown
// outcome.
const stateSQL = `/* metrics.state */
SELECT 'task:' || state, count(*)::float8 FROM tasks GROUP BY state
UNION ALL
SELECT 'outbox_pending', count(*)::float8 FROM outbox WHERE state = 'pending'
UNION ALL
SELECT 'outbox_lag', coalesce(extract(epoch FROM now() - min(available_at)), 0)::float8
	FROM outbox WHERE state = 'pending' AND available_at <= now()
UNION ALL
SELECT 'ledger_unknown', count(*)::float8 FROM ledger WHERE state = 'unknown'`

// DB gauges are read at scrape time, at most once per cacheFor: a count over
// a large tasks table is not free.
const cacheFor = 10 * time.Second

var (
	tasksDesc   = prometheus.NewDesc(ns+"_tasks", "Tasks by state (all tenants).", []string{"state"}, nil)
	pendingDesc = prometheus.NewDesc(ns+"_outbox_pending", "Outbox events not yet delivered.", nil, nil)
	lagDesc     = prometheus.NewDesc(ns+"_outbox_lag_seconds", "Age of the oldest due, undelivered outbox event.", nil, nil)
	unknownDesc = prometheus.NewDesc(ns+"_ledger_unknown_effects", "Effects of unknown outcome waiting for an operator.", nil, nil)
	upDesc      = prometheus.NewDesc(ns+"_database_up", "Whether the last read of the database gauges succeeded.", nil, nil)
)

// dbCollector reads the database gauges.
type dbCollector struct {
	db claims.DB

	mu     sync.Mutex
	at     time.Time
	values map[string]float64
	up     bool
}

// WatchDatabase adds the gauges read from db.
func (m *Metrics) WatchDatabase(db claims.DB) {
	m.Registry.MustRegister(&dbCollector{db: db})
}

func (c *dbCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{tasksDesc, pendingDesc, lagDesc, unknownDesc, upDesc} {
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
	for k, v := range c.values {
		switch {
		case len(k) > 5 && k[:5] == "task:":
			ch <- prometheus.MustNewConstMetric(tasksDesc, prometheus.GaugeValue, v, k[5:])
		case k == "outbox_pending":
			ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, v)
		case k == "outbox_lag":
			ch <- prometheus.MustNewConstMetric(lagDesc, prometheus.GaugeValue, v)
		case k == "ledger_unknown":
			ch <- prometheus.MustNewConstMetric(unknownDesc, prometheus.GaugeValue, v)
		}
	}
}

func (c *dbCollector) read() (map[string]float64, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out := map[string]float64{}
	// The gauges count whole tables: let the planner scan them.
	err := pgplan.SeqScan(ctx, c.db, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, stateSQL)
		if err != nil {
			return err
		}
		var k string
		var v float64
		_, err = pgx.ForEachRow(rows, []any{&k, &v}, func() error {
			out[k] = v
			return nil
		})
		return err
	})
	return out, err == nil
}
