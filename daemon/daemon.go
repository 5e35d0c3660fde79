package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/argschema"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/database"
	"github.com/agentledger/agentledger/flow"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/metrics"
	"github.com/agentledger/agentledger/migrations"
	"github.com/agentledger/agentledger/saga"
	"github.com/agentledger/agentledger/tenants"
	"github.com/agentledger/agentledger/tools"
	"github.com/agentledger/agentledger/worker"
)

// Config is the whole daemon's configuration; zero fields take the defaults
// of the packages they configure (agentd's flags document each).
type Config struct {
	// DatabaseURL names the database; empty starts (or joins) the embedded
	// cluster in StateDir.
	DatabaseURL string
	StateDir    string
	MaxConns    int32
	// PgBouncer: the database is reached through a transaction-pooling
	// PgBouncer (no LISTEN, no session state).
	PgBouncer bool
	// NoMigrate refuses to start on an older schema instead of migrating.
	NoMigrate bool

	// The worker pool (worker.Config).
	WorkerID     string
	Queues       []string
	Concurrency  int
	BatchSize    int
	Lease        time.Duration
	Heartbeat    time.Duration
	PollInterval time.Duration
	PollOnly     bool
	Grace        time.Duration
	// ClaimCooldown and Backoff: worker.Config's (negative cooldown: none).
	ClaimCooldown time.Duration
	Backoff       agentledger.Backoff

	// The agent kind's model endpoint; LLMAPIKey is a secret.
	LLMBaseURL  string
	LLMAPIKey   string
	LLMModel    string
	LLMTimeout  time.Duration
	LLMMaxSteps int
	// LLMMaxAnswerTokens caps the max_tokens of a budgeted completion
	// (agent.Config.MaxAnswerTokens).
	LLMMaxAnswerTokens int

	// The built-in HTTP tools.
	HTTPAllowedHosts       []string
	UnsafeHTTPAllowedHosts []string
	HTTPHostHeadersFile    string

	// Notifications: the console sink's file, or Slack (SlackToken is a
	// secret; SlackTokenFile holds one).
	NotifyFile          string
	SlackToken          string
	SlackTokenFile      string
	SlackAPIURL         string
	SlackInterval       time.Duration
	SlackRate           int
	NoDispatch          bool
	DispatchConcurrency int
	DispatchLease       time.Duration

	// The HTTP server: Listen is its address (empty: no server) unless
	// Listener is given, already bound.
	Listen                 string
	Listener               net.Listener
	IdempotencyKeyOptional bool
	HooksFile              string
	// APIMaxConns caps the HTTP API's own connection pool (default
	// DefaultAPIMaxConns), apart from the worker pool's MaxConns.
	APIMaxConns int32
	// MetricsTokenFile holds a bearer token (a secret) that GET /metrics
	// then requires; empty leaves /metrics open to whoever reaches Listen.
	MetricsTokenFile string
	// TrustedProxies are the reverse proxies (IP addresses or CIDR
	// prefixes) whose X-Forwarded-For names the client a failed
	// authentication is counted against; empty: the peer's address counts.
	TrustedProxies []string

	NoCron          bool
	NoJanitor       bool
	JanitorInterval time.Duration
	Retain          Retention

	// Grants are stored as these tenants' grants when Run starts (agentd's
	// [grant.<tenant>] tables), except where an operator set the tenant's
	// grant (agentctl): that one stands, and Run logs how it differs.
	// Other tenants' grants are left as stored.
	Grants map[string]*grants.Grant

	// Limits are stored as these targets' fleet-wide rate limits when Run
	// starts (agentd's [[limit]] tables, source "config"), except where an
	// operator set the target's limit, as Grants; other targets' limits
	// are left as stored.
	Limits []flow.Limit

	// TenantShares are stored as these tenants' shares of the claim when
	// Run starts (agentd's [[tenant_share]] tables), except where an
	// operator set the tenant's share, as Grants; other tenants' shares
	// are left as stored.
	TenantShares []tenants.Share

	// Compensations declare, by tool name, the call that undoes a call of
	// that tool in agent tasks (agentd's [[compensation]] tables; a task's
	// payload may declare its own). See package saga.
	Compensations map[string]saga.Compensation

	// MCPServers are MCP tool servers whose tools steps and agent tasks may
	// call; one that cannot be reached makes only its own tools fail.
	MCPServers []MCPServer

	// Observer and ObserveEffect, when set, are told what the worker pool
	// does and how each effect of steps and agent tasks ended, beside the
	// daemon's metrics (a benchmark counts finished tasks with them).
	Observer      worker.Observer
	ObserveEffect func(operation string, class ledger.Class, outcome string)
	// Metrics are the daemon's collectors (served at /metrics); nil makes
	// new ones. Give them to read the figures in-process or to serve them
	// from a registry of your own.
	Metrics *metrics.Metrics

	// Logger receives the daemon's logs; default slog.Default().
	Logger *slog.Logger
	// Stdout is where the console sink prints; default os.Stdout.
	Stdout io.Writer
	// BeforeRun, when set, runs once everything is built and before the
	// first claim, with the daemon's pool (the demo seeds its tasks there).
	BeforeRun func(ctx context.Context, db *pgxpool.Pool) error
}

// DefaultAPIMaxConns is the HTTP API's connection pool size by default.
const DefaultAPIMaxConns = 4

// Retention is the janitor's windows; zero takes each sweep's default.
type Retention struct {
	Ledger, Tasks, Outbox, Inbox, IdempotencyKeys time.Duration
}

// ConfigError is a configuration mistake, found before any task is
// claimed.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// Daemon is agentd as a library: worker pool, HTTP API, webhooks, cron,
// notification dispatcher, janitor and metrics over one database, with the
// kinds and tools registered before Run.
type Daemon struct {
	cfg    Config
	kinds  map[string]worker.Handler
	tools  []tools.Tool
	routes map[string]http.Handler

	mu    sync.Mutex
	pool  *worker.Pool
	hurry bool

	// grants are the tenants' grants, cached while the worker pool's
	// LISTEN session hears their changes.
	grants *grants.Cache
	// limits are the fleet's limits, read by the HTTP tools and the Slack
	// sink; kept current by NOTIFY on flow.Channel.
	limits *flow.Limiter

	ready   chan struct{}
	sups    []*mcpSupervisor // set before ready closes
	schemas schemaCache
}

// New returns a daemon for cfg; nothing runs before Run.
func New(cfg Config) *Daemon {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Stdout == nil {
		cfg.Stdout = os.Stdout
	}
	return &Daemon{cfg: cfg, kinds: map[string]worker.Handler{}, routes: map[string]http.Handler{},
		ready: make(chan struct{})}
}

// RegisterKind makes the daemon serve tasks of kind name with h. A name
// taken by a built-in kind or registered before is refused.
func (d *Daemon) RegisterKind(name string, h worker.Handler) error {
	switch {
	case name == "" || h == nil:
		return fmt.Errorf("daemon: a kind needs a name and a handler")
	case slices.Contains(builtinKinds, name):
		return fmt.Errorf("daemon: kind %q is built in", name)
	case d.kinds[name] != nil:
		return fmt.Errorf("daemon: kind %q is registered twice", name)
	}
	d.kinds[name] = h
	return nil
}

// RegisterTool adds t to the tools steps and agent tasks may call, through
// the ledger like the built-in ones. A name taken by a built-in tool or
// registered before is refused when Run starts.
func (d *Daemon) RegisterTool(t tools.Tool) error {
	if t == nil || t.Name() == "" {
		return fmt.Errorf("daemon: a tool needs a name")
	}
	d.tools = append(d.tools, t)
	return nil
}

// checkPayload checks a submitted payload against its kind: a typed kind
// of this daemon in full (its Go type and Validate), one another daemon
// published against its schema. Kinds this daemon serves untyped are not
// looked up; published schemas are remembered for schemaTTL, so a submit
// costs no extra query most of the time.
func (d *Daemon) checkPayload(ctx context.Context, db claims.DB, kind string, payload json.RawMessage) error {
	if h, ok := d.kinds[kind]; ok {
		if k, typed := h.(KindHandler); typed {
			return k.CheckPayload(payload)
		}
		return nil
	}
	if slices.Contains(builtinKinds, kind) {
		return nil
	}
	schema, ok, err := d.schemas.get(ctx, db, kind)
	if err != nil || !ok {
		return err
	}
	return argschema.CheckDoc(schema, "payload", payload)
}

// schemaTTL is how long a published payload schema (or its absence) is
// remembered.
const schemaTTL = 10 * time.Second

// schemaCache remembers the payload schemas other daemons published.
type schemaCache struct {
	mu    sync.Mutex
	known map[string]cachedSchema
}

type cachedSchema struct {
	doc json.RawMessage
	ok  bool
	at  time.Time
}

func (c *schemaCache) get(ctx context.Context, db claims.DB, kind string) (json.RawMessage, bool, error) {
	c.mu.Lock()
	s, hit := c.known[kind]
	c.mu.Unlock()
	if hit && time.Since(s.at) < schemaTTL {
		return s.doc, s.ok, nil
	}
	doc, ok, err := claims.New(db).KindSchema(ctx, kind)
	if err != nil {
		return nil, false, err
	}
	c.mu.Lock()
	if c.known == nil {
		c.known = map[string]cachedSchema{}
	}
	c.known[kind] = cachedSchema{doc: doc, ok: ok, at: time.Now()}
	c.mu.Unlock()
	return doc, ok, nil
}

// publishKinds records the payload schemas of this daemon's typed kinds.
func (d *Daemon) publishKinds(ctx context.Context, db claims.DB, worker string) error {
	schemas := map[string]json.RawMessage{}
	for name, h := range d.kinds {
		if k, ok := h.(KindHandler); ok {
			schemas[name] = k.PayloadSchema()
		}
	}
	return claims.New(db).PublishKinds(ctx, worker, schemas)
}

// Handle serves h on the daemon's HTTP server at pattern (net/http's
// ServeMux patterns), beside the API.
func (d *Daemon) Handle(pattern string, h http.Handler) { d.routes[pattern] = h }

// Ready is closed once Run has migrated the database and built every part,
// just before the first claim: from then on tasks may be submitted.
func (d *Daemon) Ready() <-chan struct{} { return d.ready }

// MCPStates are the configured MCP servers' states by name: "connected",
// "connecting", or why not (after Ready; empty before).
func (d *Daemon) MCPStates() map[string]string {
	select {
	case <-d.ready:
		return mcpStates(d.sups)
	default:
		return map[string]string{}
	}
}

// EndGrace ends a running shutdown's grace period at once: running tasks
// are cancelled and their leases released (agentd's second signal).
func (d *Daemon) EndGrace() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.hurry = true
	if d.pool != nil {
		d.pool.EndGrace()
	}
}

// Run opens the database (migrating it unless NoMigrate), builds every
// part, and works until ctx ends; then it stops claiming, lets running
// tasks finish within the grace period and releases the rest.
func (d *Daemon) Run(ctx context.Context) error {
	cfg, log := &d.cfg, d.cfg.Logger
	// Nothing of the configuration is stored before all of it is checked:
	// a daemon that refuses to start changes nothing (issue 30, U5).
	if err := checkSeeds(cfg); err != nil {
		return err
	}
	var db *database.DB
	err := retryStart(ctx, log, "connecting", serverUnavailable, func() (err error) {
		db, err = database.Open(ctx, database.Config{URL: cfg.DatabaseURL, StateDir: cfg.StateDir, MaxConns: cfg.MaxConns,
			Pooler: cfg.PgBouncer, Logger: log})
		return err
	})
	if err != nil {
		return err
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := db.Close(ctx); err != nil {
			log.Error("closing the database", "err", err)
		}
	}()
	log.Info("connected", "database", db.String())

	// From here on the database has answered: a connection cut or refused
	// is a restart under way, tried again.
	if err := retryStart(ctx, log, "migrating", transient, func() error { return migrate(ctx, db, cfg, log) }); err != nil {
		return err
	}
	ln := cfg.Listener
	if ln == nil {
		if ln, err = listen(cfg); err != nil {
			return err
		}
	}
	// Until the services run, a start that fails lets go of what it opened
	// for them, so that a Run again can bind the same address.
	var svc *services
	serving := false
	defer func() {
		if serving {
			return
		}
		if svc != nil {
			for _, c := range svc.closers {
				c()
			}
		}
		if ln != nil && ln != cfg.Listener {
			ln.Close()
		}
	}()
	m := cfg.Metrics
	if m == nil {
		m = metrics.New()
	}
	d.grants = grants.NewCache(grants.NewStore(db.Pool))
	d.limits = flow.NewLimiter(db.Pool, log)
	d.limits.ObserveBreakers(m.BreakerOpened, m.BreakerProbed)
	kinds, reg, err := d.handlers(db.Pool, m)
	if err != nil {
		return err
	}
	sups, err := mcpSupervisors(cfg.MCPServers, reg, d.limits, log)
	if err != nil {
		return err
	}
	if cfg.LLMBaseURL == "" {
		log.Info("agent tasks: no model endpoint (set AGENTLEDGER_LLM_BASE_URL); steps tasks run without one")
	} else {
		log.Info("agent tasks: model endpoint configured", "base_url", database.Redact(cfg.LLMBaseURL), "model", cfg.LLMModel,
			"api_key_set", cfg.LLMAPIKey != "")
	}
	pool, err := worker.New(db.Pool, worker.Config{
		ID: cfg.WorkerID, Queues: cfg.Queues, Concurrency: cfg.Concurrency, BatchSize: cfg.BatchSize,
		Lease: cfg.Lease, HeartbeatInterval: cfg.Heartbeat, PollInterval: cfg.PollInterval,
		PollOnly: cfg.PollOnly, Grace: cfg.Grace, ClaimCooldown: cfg.ClaimCooldown, Backoff: cfg.Backoff,
		Handlers: kinds, Logger: log, Observer: teeObserver(m.Worker(), cfg.Observer),
		MCPStates: d.MCPStates, Tools: reg.Schemas, ToolClasses: reg.Classes, Listening: d.grants.Listening,
		Channels: map[string]func(string){grants.Channel: d.grants.Changed, flow.Channel: func(string) { d.limits.Changed() }},
	})
	if err != nil {
		return &ConfigError{err}
	}
	check := func(ctx context.Context, kind string, payload json.RawMessage) error {
		return d.checkPayload(ctx, db.Pool, kind, payload)
	}
	svc, err = buildServices(cfg, db.Pool, d.limits, m, pool.ID(), ln, d.routes, check, d.grants,
		func() map[string]string { return mcpStates(sups) }, log)
	if err != nil {
		return err
	}
	for _, s := range sups {
		svc.runs = append(svc.runs, s.run)
	}
	d.sups = sups
	// Every part is built and every setting checked: only now is the
	// configuration's state stored, before anything is claimed or served.
	if err := retryStart(ctx, log, "storing grants", transient, func() error {
		return storeGrants(ctx, db.Pool, cfg.Grants, log)
	}); err != nil {
		return err
	}
	if err := retryStart(ctx, log, "storing limits", transient, func() error {
		return storeLimits(ctx, db.Pool, cfg, log)
	}); err != nil {
		return err
	}
	if err := retryStart(ctx, log, "storing tenant shares", transient, func() error {
		return storeShares(ctx, db.Pool, cfg.TenantShares, log)
	}); err != nil {
		return err
	}
	if err := retryStart(ctx, log, "publishing kinds", transient, func() error {
		return d.publishKinds(ctx, db.Pool, pool.ID())
	}); err != nil {
		return err
	}
	if cfg.DatabaseURL != "" { // the embedded cluster is one local server: no failover replaces it
		warnUnreplicated(ctx, db.Pool, unsafeTools(reg.Classes(), cfg.UnsafeHTTPAllowedHosts, cfg.MCPServers), log)
	}
	// Registered before the API answers, so that the kinds this daemon
	// serves are accepted from the first request (and before BeforeRun,
	// which may hold the pool's connections); Run refreshes it every 10s.
	if err := pool.Announce(ctx); err != nil && ctx.Err() == nil {
		log.Warn("announcing the worker failed: submissions of its kinds are refused until it is retried", "err", err)
	}
	if cfg.BeforeRun != nil {
		if err := cfg.BeforeRun(ctx, db.Pool); err != nil {
			pool.Retire()
			return err
		}
	}
	d.mu.Lock()
	d.pool = pool
	if d.hurry {
		pool.EndGrace()
	}
	d.mu.Unlock()
	// The services stop with the pool: at ctx's end, or when the pool
	// fails.
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	serving = true
	go func() { served <- svc.run(sctx) }()
	close(d.ready)
	err = pool.Run(ctx)
	stop()
	if serr := <-served; err == nil {
		err = serr
	}
	return err
}

// migrate applies pending migrations, or with NoMigrate refuses to run on
// a schema older than this binary.
func migrate(ctx context.Context, db *database.DB, cfg *Config, log *slog.Logger) error {
	m, err := migrations.New(db.Pool, nil)
	if err != nil {
		return err
	}
	defer m.Close()
	if cfg.NoMigrate {
		v, err := m.Version(ctx)
		if err != nil {
			return err
		}
		if v < m.Latest() {
			return fmt.Errorf("schema is at version %d, this agentd needs %d: run `agentctl migrate up` or start without --no-migrate", v, m.Latest())
		}
		return nil
	}
	applied, err := m.Up(ctx)
	if err != nil {
		return err
	}
	if len(applied) > 0 {
		log.Info("applied migrations", "versions", applied)
	}
	return nil
}
