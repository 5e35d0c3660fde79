package database

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger/internal/pgplan"
	"github.com/agentledger/agentledger/internal/secretfmt"
	"github.com/agentledger/agentledger/internal/syncwait"
	"github.com/agentledger/agentledger/pgembed"
)

// Config says which database to open.
type Config struct {
	// URL of an existing server (DATABASE_URL); empty starts or joins the
	// embedded cluster.
	URL string
	// StateDir of the embedded cluster; empty is pgembed.DefaultStateDir().
	StateDir string
	// MustExist refuses a state directory without a cluster
	// (*pgembed.NoClusterError) rather than initialising one: for
	// agentctl, which should not make a cluster where a path is mistyped.
	MustExist bool
	// MaxConns caps the pool; 0 keeps pgx's default (max(4, CPUs)).
	MaxConns int32
	// Pooler says the URL is a transaction-pooling PgBouncer: no named
	// statement is prepared on a server connection that the next
	// transaction may not get. pgx's cache-describe mode learns each
	// statement's parameter types once (a self-contained Parse+Describe),
	// then sends Parse+Bind+Execute of the unnamed statement in one
	// round trip; exec mode would guess types from Go values and send a
	// []byte for a jsonb parameter as bytea.
	Pooler bool
	// PoolerPrepares says the URL is such a pooler (it implies Pooler)
	// that keeps prepared statements for its clients (PgBouncer 1.21 or
	// later with max_prepared_statements above 0): statements are
	// prepared and their plans kept as on a direct connection. Open checks that the pooler does
	// (ErrPoolerPassesPrepared).
	PoolerPrepares bool
	// Logger; nil discards.
	Logger *slog.Logger
}

// embeddedSettings tune the embedded cluster for a queue: more connections
// than the default 100 so several daemons and operators fit.
var embeddedSettings = map[string]string{
	"max_connections": "300",
}

// DB is an open pool and, for the embedded default, this process's hold on
// the cluster.
type DB struct {
	Pool    *pgxpool.Pool
	cluster *pgembed.Cluster
	desc    string
	log     *slog.Logger
}

// Open connects as cfg says and checks the connection.
func Open(ctx context.Context, cfg Config) (*DB, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	db := &DB{log: log}
	raw := cfg.URL
	if raw == "" {
		dir, err := stateDir(cfg.StateDir)
		if err != nil {
			return nil, err
		}
		c, err := pgembed.Start(ctx, pgembed.Config{StateDir: dir, Settings: embeddedSettings, Logger: log,
			MustExist: cfg.MustExist})
		if err != nil {
			if nc := (*pgembed.NoClusterError)(nil); errors.Is(err, pgembed.ErrNoBinaries) || errors.As(err, &nc) {
				return nil, err // already says what to install and that DATABASE_URL is the alternative
			}
			return nil, fmt.Errorf("starting the embedded PostgreSQL (set DATABASE_URL to use an existing server instead): %w", err)
		}
		db.cluster = c
		raw = c.URL(pgembed.DatabaseName)
		db.desc = fmt.Sprintf("embedded PostgreSQL %s (data %s, 127.0.0.1:%d)", c.Version(), c.DataDir(), c.Port())
	} else {
		db.desc = Redact(raw)
	}
	pcfg, err := pgxpool.ParseConfig(raw)
	if err != nil {
		db.closeCluster(ctx)
		// pgx's message can quote the URL, password included: say less,
		// but what a setting's own reason says, where it cannot hold
		// the password.
		return nil, fmt.Errorf("%w %s: %s", ErrBadURL, Redact(raw), urlProblem(err))
	}
	if cfg.MaxConns > 0 {
		pcfg.MaxConns = cfg.MaxConns
	}
	// A URL's own application_name is kept: an operator (or a benchmark)
	// tells its daemons apart in pg_stat_activity by it.
	if pcfg.ConnConfig.RuntimeParams["application_name"] == "" {
		pcfg.ConnConfig.RuntimeParams["application_name"] = "agentledger"
	}
	pooler := cfg.Pooler || cfg.PoolerPrepares
	if cfg.Pooler && !cfg.PoolerPrepares {
		pcfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
	}
	if !pooler {
		for k, v := range pgplan.Settings {
			pcfg.ConnConfig.RuntimeParams[k] = v
		}
	}
	pcfg.AfterConnect = GuardIDs(log)
	// A claim whose commit's wait for a synchronous standby was cancelled
	// committed locally only: the notice says so (package syncwait).
	pcfg.ConnConfig.OnNotice = syncwait.OnNotice
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err == nil {
		err = pool.Ping(ctx)
		if err != nil {
			pool.Close()
		}
	}
	if err != nil {
		db.closeCluster(ctx)
		return nil, fmt.Errorf("connecting to %s: %w", db.desc, err)
	}
	if cfg.PoolerPrepares {
		if err := checkKeepsPrepared(ctx, pool, log); err != nil {
			pool.Close()
			return nil, fmt.Errorf("%s: %w", db.desc, err)
		}
	}
	db.Pool = pool
	return db, nil
}

// stateDir returns dir made absolute, or the default state directory.
func stateDir(dir string) (string, error) {
	if dir == "" {
		return pgembed.DefaultStateDir()
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("state directory %q: %w", dir, err)
	}
	return abs, nil
}

// String describes the database without secrets.
func (d *DB) String() string { return d.desc }

// Created reports whether Open initialised the embedded cluster: its
// state directory held none.
func (d *DB) Created() bool { return d.cluster != nil && d.cluster.Created() }

// Started reports whether Open started the embedded cluster's server (it
// was not running, as when no agentd uses it).
func (d *DB) Started() bool { return d.cluster != nil && d.cluster.Started() }

// Embedded reports whether the database is the embedded cluster.
func (d *DB) Embedded() bool { return d.cluster != nil }

// Close closes the pool and lets go of the embedded cluster, which stops
// when its last user is gone.
func (d *DB) Close(ctx context.Context) error {
	others := 0
	// Another registered user (an agentd) keeps the server up whoever else
	// is connected: counting them would wait out otherGrace while that
	// user's connections stand, a second at every agentctl command.
	if d.cluster != nil && !d.cluster.Shared() {
		others = d.otherClients(ctx)
	}
	d.Pool.Close()
	if others > 0 && d.cluster != nil {
		// Clients the cluster's lock does not see (daemons connected by
		// URL) would lose their database if the last registered user
		// stopped it.
		d.log.Info("left the embedded PostgreSQL running: other clients are connected to it", "clients", others)
		err := d.cluster.Leave(ctx)
		d.cluster = nil
		return err
	}
	return d.closeCluster(ctx)
}

// otherClients counts the server's client connections that are not this
// pool's: every idle connection of the pool names its backend, and the
// rest are someone else's. 0 when it cannot tell. A backend outlives its
// client by a moment: the daemon's other connections, closed just before
// (its API pool, its LISTEN session), were counted, and the cluster left
// running after a clean exit. So a count above 0 is asked again until it
// is 0 or otherGrace has passed.
func (d *DB) otherClients(ctx context.Context) int {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conns := d.Pool.AcquireAllIdle(ctx)
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	if len(conns) == 0 {
		c, err := d.Pool.Acquire(ctx)
		if err != nil {
			return 0
		}
		conns = append(conns, c)
	}
	ours := make([]int32, len(conns))
	for i, c := range conns {
		ours[i] = int32(c.Conn().PgConn().PID())
	}
	deadline := time.Now().Add(otherGrace)
	for {
		var n int
		if err := conns[0].QueryRow(ctx, otherClientsSQL, ours).Scan(&n); err != nil {
			return 0
		}
		if n == 0 || time.Now().After(deadline) {
			return n
		}
		select { // polling a condition: a backend's exit sends no signal
		case <-ctx.Done():
			return n
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// otherGrace is how long otherClients waits for backends whose clients
// have gone to exit.
const otherGrace = time.Second

// otherClientsSQL counts the client backends that are not $1.
const otherClientsSQL = `/* database.otherClients */
SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> ALL ($1::int4[])`

func (d *DB) closeCluster(ctx context.Context) error {
	if d.cluster == nil {
		return nil
	}
	err := d.cluster.Close(ctx)
	d.cluster = nil
	return err
}

// ErrBadURL is Open's error for a URL that does not parse: a mistake in
// the configuration, not a server to wait for.
var ErrBadURL = errors.New("invalid database URL")

// Redact returns a database URL or keyword/value string fit for logs and
// errors: its password masked, however malformed the string.
func Redact(raw string) string { return secretfmt.URL(raw) }

// urlProblem is why pgx refused a URL, when its reason names a setting
// (never a part that could be the password), else the form expected.
func urlProblem(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, "`: "); i >= 0 {
		reason := msg[i+3:]
		for _, safe := range []string{"failed to configure TLS", "invalid port", "cannot parse pool_", "invalid target_session_attrs", "invalid connect_timeout"} {
			if strings.HasPrefix(reason, safe) {
				return reason
			}
		}
	}
	return "expected postgres://user:password@host:port/dbname"
}
