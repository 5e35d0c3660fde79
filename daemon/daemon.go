package daemon

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/admit"
	"github.com/agentledger/agentledger/agent"
	"github.com/agentledger/agentledger/argschema"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/database"
	"github.com/agentledger/agentledger/dbaway"
	"github.com/agentledger/agentledger/flow"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/metrics"
	"github.com/agentledger/agentledger/migrations"
	"github.com/agentledger/agentledger/registry"
	"github.com/agentledger/agentledger/tools"
	"github.com/agentledger/agentledger/worker"
)

// ErrStarted is what a registration, or a second Run, made once Run has
// started is refused with (errors.Is).
var ErrStarted = errors.New("Run has started")

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
	// mine holds the routes, to refuse at Handle one no ServeMux takes.
	mine *http.ServeMux
	// intercept are the embedder's interceptors on the effect path, in
	// the order added.
	intercept []tools.Interceptor

	mu    sync.Mutex
	pool  *worker.Pool
	hurry bool
	db    *pgxpool.Pool // the daemon's, while it runs (Client)

	// grants are the tenants' grants, cached while the worker pool's
	// LISTEN session hears their changes.
	grants *grants.Cache
	// limits are the fleet's limits, read by the HTTP tools and the Slack
	// sink; kept current by NOTIFY on flow.Channel.
	limits *flow.Limiter

	ready chan struct{}
	// run is set when Run starts: kinds, tools and interceptors added
	// after it would never be used, so they are refused. reg orders the
	// additions against it: one that saw run unset is in before Run reads
	// them.
	run  atomic.Bool
	reg  sync.Mutex
	sups []*mcpSupervisor // set before ready closes
	// door admits every task this daemon queues: the API's, the
	// webhooks', cron's and create_task's children.
	door *admit.Door
}

// New returns a daemon for cfg; nothing runs before Run.
func New(cfg Config) *Daemon {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Stdout == nil {
		cfg.Stdout = os.Stdout
	}
	return &Daemon{cfg: cfg, kinds: map[string]worker.Handler{}, routes: map[string]http.Handler{}, mine: http.NewServeMux(),
		ready: make(chan struct{})}
}

// RegisterKind makes the daemon serve tasks of kind name with h. It
// refuses a nil handler (nil, a nil function, Kind(nil)), a name no task
// could have (1-128 letters, digits, '.', '_', ':' or '-', as
// agentledger.ValidName says), and a name taken by a built-in kind or
// registered before.
func (d *Daemon) RegisterKind(name string, h worker.Handler) error {
	d.reg.Lock()
	defer d.reg.Unlock()
	switch {
	case d.run.Load():
		return fmt.Errorf("daemon: kind %q registered after %w: register kinds before Run", name, ErrStarted)
	case name == "" || nilHandler(h):
		return fmt.Errorf("daemon: a kind needs a name and a handler")
	case !agentledger.ValidName(name):
		// No task could be submitted of it.
		return fmt.Errorf("daemon: kind %q must be 1-128 characters of letters, digits, '.', '_', ':' or '-', as a task's kind is", agentledger.Clip(name))
	case slices.Contains(builtinKinds, name):
		return fmt.Errorf("daemon: kind %q is built in", name)
	case d.kinds[name] != nil:
		return fmt.Errorf("daemon: kind %q is registered twice", name)
	}
	d.kinds[name] = h
	return nil
}

// nilHandler reports whether h would call nothing: nil, a nil function
// (worker.HandlerFunc(nil)), or a typed kind made of one (Kind(nil)).
func nilHandler(h worker.Handler) bool {
	if k, ok := h.(interface{ nilFunc() bool }); ok {
		return k.nilFunc()
	}
	return isNil(h)
}

// isNil reports whether v is nil, or a nil function, pointer, map or
// interface in an interface (http.HandlerFunc(nil), (*T)(nil)).
func isNil(v any) bool {
	if v == nil {
		return true
	}
	r := reflect.ValueOf(v)
	switch r.Kind() {
	case reflect.Func, reflect.Pointer, reflect.Map, reflect.Interface:
		return r.IsNil()
	}
	return false
}

// RegisterTool adds t to the tools steps and agent tasks may call, through
// the ledger like the built-in ones. A name taken by a built-in tool or
// registered before is refused.
func (d *Daemon) RegisterTool(t tools.Tool) error {
	d.reg.Lock()
	defer d.reg.Unlock()
	if d.run.Load() {
		return fmt.Errorf("daemon: tool registered after %w: register tools before Run", ErrStarted)
	}
	if isNil(t) {
		return fmt.Errorf("daemon: the tool is nil")
	}
	if err := tools.CheckName(t.Name()); err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	if server, _, ok := strings.Cut(t.Name(), "/"); ok && slices.ContainsFunc(d.cfg.MCPServers, func(s MCPServer) bool { return s.Name == server }) {
		return fmt.Errorf("daemon: tool %q is in the namespace of the configured MCP server %s: name yours otherwise", t.Name(), server)
	}
	if err := argschema.Object(t.Parameters()); err != nil {
		return fmt.Errorf("daemon: tool %q: its Parameters %w", t.Name(), err)
	}
	if slices.Contains(builtinToolNames(), t.Name()) {
		return fmt.Errorf("daemon: tool %q is built in: name yours otherwise", t.Name())
	}
	for _, had := range d.tools {
		if had.Name() == t.Name() {
			return fmt.Errorf("daemon: tool %q is registered twice", t.Name())
		}
	}
	d.tools = append(d.tools, t)
	return nil
}

// Intercept adds ic to the path every effect of every kind takes (steps,
// agent tool calls and model completions, saga.Call, compensations):
// after the tool is looked up, the grant checked and the effect built,
// before the ledger. Interceptors run in the order added; call Intercept
// before Run. An audit log, a policy or an approval gate is one (see
// tools.Interceptor and tools.Park).
func (d *Daemon) Intercept(ic tools.Interceptor) error {
	d.reg.Lock()
	defer d.reg.Unlock()
	if d.run.Load() {
		// The effect path is built once, as Run starts: a later one would
		// be skipped without a word.
		return fmt.Errorf("daemon: interceptor added after %w: call Intercept before Run", ErrStarted)
	}
	if ic == nil {
		return fmt.Errorf("daemon: an interceptor must not be nil")
	}
	d.intercept = append(d.intercept, ic)
	return nil
}

// typedPayload is the door's check of a payload of a kind this daemon
// serves from queue (admit.Door.Typed): a typed kind in full (its Go type
// and Validate); an untyped or built-in kind has nothing to check here
// (steps and agent payloads the door checks itself). Other kinds, and
// kinds of queues this daemon does not claim from, are not known: the door
// holds them against the schemas the pools claiming them announced.
func (d *Daemon) typedPayload(kind, queue string, payload json.RawMessage) (bool, error) {
	qs := d.cfg.Worker.Queues
	if len(qs) == 0 {
		qs = []string{claims.DefaultQueue}
	}
	if !slices.Contains(qs, queue) {
		return false, nil
	}
	if h, ok := d.kinds[kind]; ok {
		if k, typed := h.(KindHandler); typed {
			return true, k.CheckPayload(payload)
		}
		return true, nil
	}
	return slices.Contains(builtinKinds, kind), nil
}

// kindSchemas are the payload schemas of this daemon's typed kinds.
func (d *Daemon) kindSchemas() map[string]json.RawMessage {
	schemas := map[string]json.RawMessage{}
	for name, h := range d.kinds {
		if k, ok := h.(KindHandler); ok {
			schemas[name] = k.PayloadSchema()
		}
	}
	return schemas
}

// publishKinds records the payload schemas of this daemon's typed kinds,
// the check of submissions while no daemon serving them is live.
func (d *Daemon) publishKinds(ctx context.Context, db registry.DB, worker string) error {
	return registry.New(db).PublishKinds(ctx, worker, d.kindSchemas())
}

// warnSharedWorkerID warns when another live daemon announced itself
// under this daemon's worker id (a --worker-id given twice): leases stay
// fenced by their tokens, but the workers view shows the two as one, and
// attempts cannot tell them apart. A registration left by this daemon's
// own previous run (same host, its process gone, or this very pid after
// a container restart) is no other daemon.
func warnSharedWorkerID(ctx context.Context, db registry.DB, id string, log *slog.Logger) {
	host, pid, ago, ok, err := registry.New(db).Registration(ctx, id)
	if err != nil || !ok || ago > registry.LiveWithin {
		return
	}
	me, _ := os.Hostname()
	if host == me && (pid == os.Getpid() || syscall.Kill(pid, 0) == syscall.ESRCH) {
		return
	}
	log.Warn("another live daemon announced itself under this worker id: give each daemon its own --worker-id "+
		"(leases stay fenced, but agentctl workers shows the two as one and their attempts cannot be told apart)",
		"worker", id, "other_host", host, "other_pid", pid, "seen", ago.Round(time.Second).String()+" ago")
}

// warnKindConflicts warns of each live daemon serving one of this one's
// typed kinds from the same queue with another payload schema (another
// release, another program): a submission must fit both, and a task one
// of them takes may fail there for its payload.
func warnKindConflicts(ctx context.Context, db registry.DB, worker string, log *slog.Logger) {
	cs, err := registry.New(db).KindConflicts(ctx, worker)
	if err != nil {
		log.Debug("comparing kind schemas with the other workers failed", "err", err)
		return
	}
	for _, c := range cs {
		log.Warn("another live worker serves this typed kind from the same queues with another payload schema: "+
			"submissions must fit both, and a task one of them claims may fail there for its payload",
			"kind", c.Kind, "worker", c.Worker, "queues", strings.Join(c.Queues, ","))
	}
}

// Handle serves h on the daemon's HTTP server at pattern (net/http's
// ServeMux patterns), beside the API; call it before Run. It refuses a
// pattern under the daemon's own paths (the API's /v1/…, /healthz,
// /readyz, /metrics, Slack's interactions path), one ServeMux does not
// take or that conflicts with a route added before, and a nil handler;
// Run refuses, with a *ConfigError, routes without an HTTP server
// (API.Listen empty and no Listener).
func (d *Daemon) Handle(pattern string, h http.Handler) error {
	d.reg.Lock()
	defer d.reg.Unlock()
	if d.run.Load() {
		// The server's routes are mounted once, as Run starts.
		return fmt.Errorf("daemon: route added after %w: call Handle before Run", ErrStarted)
	}
	if pattern == "" || isNil(h) {
		return fmt.Errorf("daemon: a route needs a pattern and a handler")
	}
	if _, dup := d.routes[pattern]; dup {
		return fmt.Errorf("daemon: route %q added twice", pattern)
	}
	if err := checkRoute(d.mine, pattern); err != nil {
		return err
	}
	d.routes[pattern] = h
	return nil
}

// Ready is closed once Run has migrated the database and built every part,
// just before the first claim: from then on tasks may be submitted. A Run
// that fails before that (the database unreachable, the API's address
// taken) returns its error and leaves Ready open: wait for either.
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

// Run opens the database (migrating it unless Database.NoMigrate), builds every
// part, and works until ctx ends; then it stops claiming, lets running
// tasks finish within the grace period and releases the rest.
func (d *Daemon) Run(ctx context.Context) error {
	d.reg.Lock()
	if d.run.Load() {
		d.reg.Unlock()
		return fmt.Errorf("daemon: Run called after %w: a Daemon runs once; make another with New", ErrStarted)
	}
	d.run.Store(true)
	d.reg.Unlock()
	cfg, log := &d.cfg, d.cfg.Logger
	// Nothing of the configuration is stored before all of it is checked:
	// a daemon that refuses to start changes nothing (issue 30, U5). What
	// needs no database is checked before one is opened.
	if err := d.checkConfig(); err != nil {
		return err
	}
	// The listener is bound before the database is opened: a mistaken
	// address (or one in use) is refused before a cluster is started or
	// a schema migrated for nothing.
	ln := cfg.API.Listener
	if ln == nil {
		var err error
		if ln, err = listen(cfg); err != nil {
			return err
		}
	}
	if ln == nil && len(d.routes) > 0 {
		return &ConfigError{fmt.Errorf("%d route(s) added with Handle, but there is no HTTP server to serve them: set %s",
			len(d.routes), setting("API.Listen", "--listen"))}
	}
	// Until the services run, a start that fails lets go of what it opened
	// for them, so that a Run again can bind the same address.
	serving := false
	defer func() {
		if !serving && ln != nil && ln != cfg.API.Listener {
			ln.Close()
		}
	}()
	var db *database.DB
	err := retryStart(ctx, log, "connecting", serverUnavailable, func() (err error) {
		db, err = database.Open(ctx, database.Config{URL: cfg.Database.URL, StateDir: cfg.Database.StateDir, MaxConns: cfg.Database.MaxConns,
			Pooler: cfg.Database.PgBouncer, PoolerPrepares: cfg.Database.PgBouncerPrepared, Logger: log})
		return err
	})
	if errors.Is(err, database.ErrPoolerPassesPrepared) {
		return &ConfigError{fmt.Errorf("%s: %w", setting("Database.PgBouncerPrepared", "--pgbouncer-prepared"), err)}
	}
	if errors.Is(err, database.ErrBadURL) {
		return &ConfigError{fmt.Errorf("%s: %w", setting("Database.URL", "--database-url or DATABASE_URL"), err)}
	}
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
	// From here on one tracker logs a database outage: once when it goes,
	// now and then while it lasts, once when it is back; the loops'
	// warnings of each failed try are held back meanwhile. Start-up's own
	// retries log each try (startLog): the daemon is not serving yet.
	startLog := log
	log = slog.New(dbaway.NewOutage(ctx, log.Handler(), db.Pool.Ping).Handler())

	// From here on the database has answered: a connection cut or refused
	// is a restart under way, tried again.
	if err := retryStart(ctx, startLog, "migrating", transient, func() error { return migrate(ctx, db, cfg, log) }); err != nil {
		return err
	}
	warnUnscopedKeys(ctx, db, log)
	var svc *services
	defer func() {
		if !serving && svc != nil {
			for _, c := range svc.closers {
				c()
			}
		}
	}()
	m := cfg.Hooks.Metrics
	if m == nil {
		m = metrics.New()
	}
	d.grants = grants.NewCache(grants.NewStore(db.Pool))
	// The configured model is taken as the workers' (one config for the
	// fleet); with none, the door refuses only what no model could pass.
	d.door = &admit.Door{Grants: d.grants, Model: cfg.Model.Name, AgentMaxSteps: cmp.Or(max(cfg.Model.MaxSteps, 0), agent.DefaultMaxSteps),
		Typed: d.typedPayload}
	d.limits = flow.NewLimiter(db.Pool, log)
	d.limits.ObserveBreakers(m.BreakerOpened, m.BreakerProbed)
	kinds, reg, err := d.handlers(db.Pool, m)
	if err != nil {
		return err
	}
	sups, err := mcpSupervisors(cfg.MCPServers, reg, log)
	if err != nil {
		return err
	}
	if cfg.Model.BaseURL == "" {
		log.Info("agent tasks: no model endpoint; steps tasks run without one; for agent tasks set " + setting("Model.BaseURL", "--llm-base-url"))
	} else {
		log.Info("agent tasks: model endpoint configured", "base_url", database.Redact(cfg.Model.BaseURL), "model", cfg.Model.Name,
			"azure_api_version", cfg.Model.AzureAPIVersion, "api_key_set", cfg.Model.APIKey != "")
	}
	wc := workerSettings(cfg)
	wc.Handlers, wc.Logger, wc.Observer = kinds, log, teeObserver(m.Worker(), cfg.Hooks.Observer)
	wc.MCPStates, wc.Tools, wc.ToolClasses, wc.Listening = d.MCPStates, reg.Schemas, reg.Classes, d.grants.Listening
	wc.KindSchemas = d.kindSchemas()
	wc.Caps = capabilities(reg, d.MCPStates, cfg.Model.BaseURL != "", d.door.AgentMaxSteps)
	wc.Channels = map[string]func(string){grants.Channel: d.grants.Changed, flow.Channel: func(string) { d.limits.Changed() }}
	pool, err := worker.New(db.Pool, wc)
	if err != nil {
		return &ConfigError{err}
	}
	if !cfg.Worker.NoStartAtEnqueue {
		d.door.Starter = pool // an idle pool takes what this daemon queues at once
	}
	svc, err = buildServices(cfg, db.Pool, d.limits, m, pool.ID(), ln, d.routes, d.door, d.grants,
		func() map[string]string { return mcpStates(sups) }, log)
	if err != nil {
		return err
	}
	for _, s := range sups {
		s.changed = pool.Reannounce
		svc.runs = append(svc.runs, s.run)
	}
	d.sups = sups
	// Every part is built and every setting checked: only now is the
	// configuration's state stored, before anything is claimed or served.
	servers := make([]string, len(cfg.MCPServers))
	for i, s := range cfg.MCPServers {
		servers[i] = s.Name
	}
	warnUnknownGrants(cfg.Policy.Grants, reg.Names(), slices.Sorted(maps.Keys(kinds)), servers, log)
	if err := retryStart(ctx, startLog, "storing grants", transient, func() error {
		return storeGrants(ctx, db.Pool, cfg.Policy.Grants, log)
	}); err != nil {
		return err
	}
	if err := retryStart(ctx, startLog, "storing limits", transient, func() error {
		return storeLimits(ctx, db.Pool, cfg, log)
	}); err != nil {
		return err
	}
	if err := retryStart(ctx, startLog, "storing tenant shares", transient, func() error {
		return storeShares(ctx, db.Pool, cfg.Policy.TenantShares, log)
	}); err != nil {
		return err
	}
	if err := retryStart(ctx, startLog, "publishing kinds", transient, func() error {
		return d.publishKinds(ctx, db.Pool, pool.ID())
	}); err != nil {
		return err
	}
	if cfg.Database.URL != "" { // the embedded cluster is one local server: no failover replaces it
		warnUnreplicated(ctx, db.Pool, unsafeTools(reg.Classes(), cfg.HTTPTools.UnsafeAllowedHosts, cfg.MCPServers), log)
	}
	// Registered before the API answers, so that the kinds this daemon
	// serves are accepted from the first request (and before
	// Hooks.BeforeRun, which may hold the pool's connections); Run refreshes it every 10s.
	warnSharedWorkerID(ctx, db.Pool, pool.ID(), log)
	if err := pool.Announce(ctx); err != nil && ctx.Err() == nil {
		log.Warn("announcing the worker failed: submissions of its kinds are refused until it is retried", "err", err)
	} else if err == nil {
		warnKindConflicts(ctx, db.Pool, pool.ID(), log)
	}
	if cfg.Hooks.BeforeRun != nil {
		if err := cfg.Hooks.BeforeRun(ctx, db.Pool); err != nil {
			pool.Retire()
			return err
		}
	}
	d.mu.Lock()
	d.pool = pool
	d.db = db.Pool
	defer d.stopped()
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

// warnUnscopedKeys warns when the database's downstream keys do not carry
// its identity (a database of an older release, upgraded: migration
// 00042): another database's task of the same id sends the same
// Idempotency-Key. A look that fails says nothing.
func warnUnscopedKeys(ctx context.Context, db *database.DB, log *slog.Logger) {
	var scoped bool
	if err := db.Pool.QueryRow(ctx, `SELECT keys_scoped_from IS NOT NULL FROM installation`).Scan(&scoped); err != nil || scoped {
		return
	}
	log.Warn("the downstream keys of this database do not carry its identity: another agentledger database's task " +
		"of the same id sends the same Idempotency-Key; with every daemon stopped, run agentctl scope-keys --yes (docs/deployment.md)")
}

// migrate applies pending migrations, or with Database.NoMigrate refuses
// to run on a schema older than this binary; either way it refuses a
// server that lacks what the claims use.
func migrate(ctx context.Context, db *database.DB, cfg *Config, log *slog.Logger) error {
	if err := claims.CheckServer(ctx, db.Pool); err != nil {
		return err
	}
	m, err := migrations.New(db.Pool, nil)
	if err != nil {
		return err
	}
	defer m.Close()
	if cfg.Database.NoMigrate {
		v, err := m.Version(ctx)
		if err != nil {
			return err
		}
		if v < m.Latest() {
			return fmt.Errorf("schema is at version %d, this agentd needs %d: run `agentctl migrate up`, or migrate at start (unset %s)",
				v, m.Latest(), setting("Database.NoMigrate", "--no-migrate"))
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
