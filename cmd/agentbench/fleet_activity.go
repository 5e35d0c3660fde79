package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// fleetActivitySQL lists the daemons' backends in the run's database with
// what each is doing. Through PgBouncer a server connection carries the
// application_name of the client whose transaction it last ran (PgBouncer
// sets it as it hands the connection over), so the same filter holds. The
// blocker's row is read with LIMIT 1: a sample once failed with "more than
// one row returned by a subquery" there (cause not found).
const fleetActivitySQL = `SELECT a.application_name, coalesce(a.state, ''), coalesce(a.wait_event_type, ''), coalesce(a.wait_event, ''),
	left(a.query, 200),
	CASE WHEN a.wait_event_type = 'Lock' THEN
		coalesce((SELECT left(b.query, 200) FROM pg_stat_activity b WHERE b.pid = (pg_blocking_pids(a.pid))[1] LIMIT 1), '?')
	ELSE '' END
FROM pg_stat_activity a
WHERE a.datname = current_database() AND a.backend_type = 'client backend' AND a.application_name LIKE '` + fleetAppPrefix + `%'`

// Activity samples, every 50ms, what the daemons' backends wait on and how
// many connections each daemon has — to PostgreSQL, and through PgBouncer
// to PgBouncer (SHOW CLIENTS on its admin console).
type Activity struct {
	pool  *pgxpool.Pool
	admin *pgx.Conn // nil without PgBouncer
	db    string

	mu          sync.Mutex
	samples     int
	waits       map[string]int // by waitKey, summed over samples
	lockWaits   map[string]int // heavyweight lock waits by statement and lock type
	peakApp     map[string]int // most backends seen per daemon
	peakTotal   int            // most backends seen at once
	peakClients map[string]int // most PgBouncer clients seen per daemon
	peakClTotal int
	err         error // the first failed sample's

	stop chan struct{}
	done chan struct{}
}

// StartActivity samples through pool (a connection to the run's database
// of its own) and, if admin is not nil, PgBouncer's clients of database db.
func StartActivity(ctx context.Context, pool *pgxpool.Pool, admin *pgx.Conn, db string) *Activity {
	a := &Activity{pool: pool, admin: admin, db: db, waits: map[string]int{}, lockWaits: map[string]int{}, peakApp: map[string]int{},
		peakClients: map[string]int{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(a.done)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			if err := a.sample(ctx); err != nil && ctx.Err() == nil {
				a.mu.Lock()
				if a.err == nil {
					a.err = err
				}
				a.mu.Unlock()
			}
			select {
			case <-a.stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return a
}

// waitKey names what a backend is doing: an active one's wait event, or
// CPU when it waits on nothing (running); another state's is followed by
// the state in brackets.
func waitKey(state, typ, event string) string {
	w := "CPU"
	if typ != "" {
		w = typ + "/" + event
	}
	if state == "active" {
		return w
	}
	if typ == "" {
		w = "no wait event"
	}
	if state == "" {
		state = "?"
	}
	return w + " (" + state + ")"
}

func (a *Activity) sample(ctx context.Context) error {
	rows, err := a.pool.Query(ctx, fleetActivitySQL)
	if err != nil {
		return err
	}
	byApp := map[string]int{}
	waits, locks := map[string]int{}, map[string]int{}
	total := 0
	for rows.Next() {
		var app, state, typ, event, query, blocker string
		if err := rows.Scan(&app, &state, &typ, &event, &query, &blocker); err != nil {
			rows.Close()
			return err
		}
		byApp[app]++
		waits[waitKey(state, typ, event)]++
		if typ == "Lock" {
			locks[statementTag(query)+" "+typ+"/"+event+" behind "+statementTag(blocker)]++
		}
		total++
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	var clients map[string]int
	if a.admin != nil {
		if clients, err = clientsByApp(ctx, a.admin, a.db); err != nil {
			return err
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.samples++
	for k, n := range waits {
		a.waits[k] += n
	}
	for k, n := range locks {
		a.lockWaits[k] += n
	}
	for app, n := range byApp {
		a.peakApp[app] = max(a.peakApp[app], n)
	}
	a.peakTotal = max(a.peakTotal, total)
	clTotal := 0
	for app, n := range clients {
		a.peakClients[app] = max(a.peakClients[app], n)
		clTotal += n
	}
	a.peakClTotal = max(a.peakClTotal, clTotal)
	return nil
}

// ActivityReport is what the samples found.
type ActivityReport struct {
	Samples   int
	Waits     map[string]int
	LockWaits map[string]int // by statement (its /* tag */), lock type and the first blocking backend's statement
	// PeakPerDaemon is the most connections any one daemon had at once:
	// backends directly, PgBouncer clients through it; PeakTotal the most
	// backends of all daemons at once (through PgBouncer: its server
	// connections), PeakClients the most PgBouncer clients at once.
	PeakPerDaemon, PeakTotal, PeakClients int
}

// Stop ends the sampling.
func (a *Activity) Stop() (ActivityReport, error) {
	close(a.stop)
	<-a.done
	a.mu.Lock()
	defer a.mu.Unlock()
	r := ActivityReport{Samples: a.samples, Waits: a.waits, LockWaits: a.lockWaits, PeakTotal: a.peakTotal, PeakClients: a.peakClTotal}
	per := a.peakApp
	if a.admin != nil {
		per = a.peakClients
	}
	for _, n := range per {
		r.PeakPerDaemon = max(r.PeakPerDaemon, n)
	}
	if a.err != nil {
		return r, fmt.Errorf("sampling pg_stat_activity: %w", a.err)
	}
	return r, nil
}

// statementTag names a statement by the comment the product's statements
// start with (/* claims.succeed */), else by its first 40 characters.
func statementTag(q string) string {
	q = strings.TrimSpace(q)
	if strings.HasPrefix(q, "/*") {
		if i := strings.Index(q, "*/"); i > 0 {
			return strings.TrimSpace(q[2:i])
		}
	}
	q = strings.Join(strings.Fields(q), " ")
	if len(q) > 40 {
		q = q[:40] + "…"
	}
	return q
}
