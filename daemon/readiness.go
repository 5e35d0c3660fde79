package daemon

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger/dbaway"
	"github.com/agentledger/agentledger/migrations"
)

// schemaCheckInterval is how often the daemon reads the schema version
// again (another binary may migrate the database under it).
const schemaCheckInterval = 10 * time.Second

// readiness answers /readyz with a ping and what the last schema check
// found: reading the version builds a migration provider, too much for a
// probe that load balancers send many at a time.
type readiness struct {
	db *pgxpool.Pool

	mu      sync.Mutex
	problem string
}

// newReadiness checks the schema once before answering any probe.
func newReadiness(ctx context.Context, db *pgxpool.Pool) *readiness {
	r := &readiness{db: db}
	r.check(ctx)
	return r
}

// run checks the schema every schemaCheckInterval until ctx ends.
func (r *readiness) run(ctx context.Context) error {
	t := time.NewTicker(schemaCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			r.check(ctx)
		}
	}
}

func (r *readiness) check(ctx context.Context) {
	p := schemaProblem(ctx, r.db)
	r.mu.Lock()
	r.problem = p
	r.mu.Unlock()
}

// why says why the daemon cannot serve, or "": the database must answer
// and its schema have been at least the one this binary knows at the last
// check.
func (r *readiness) why(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := r.db.Ping(ctx); err != nil {
		return unreachable
	}
	r.mu.Lock()
	p := r.problem
	r.mu.Unlock()
	if p == unreachable { // the last check ran during an outage that is over
		r.check(ctx)
		r.mu.Lock()
		p = r.problem
		r.mu.Unlock()
	}
	return p
}

// unreachable is the problem of a database that does not answer.
const unreachable = "database unreachable"

// schemaProblem reads the schema version and says what is wrong with it,
// or "".
func schemaProblem(ctx context.Context, db *pgxpool.Pool) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := db.Ping(ctx); err != nil { // the migrator's errors may not say so
		return unreachable
	}
	m, err := migrations.New(db, nil)
	if err != nil {
		if dbaway.Unavailable(err) {
			return unreachable
		}
		return "migrations unreadable"
	}
	defer m.Close()
	v, err := m.Version(ctx)
	switch {
	case dbaway.Unavailable(err):
		return unreachable
	case err != nil:
		return "schema version unreadable"
	case v < m.Latest():
		return fmt.Sprintf("schema at version %d, this agentd needs %d", v, m.Latest())
	}
	// A newer schema is ready: migrations keep older daemons working, and
	// an upgrade migrates before it restarts them one by one, each staying
	// behind its load balancer meanwhile.
	return ""
}
