package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentledger/agentledger"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/agentledger/agentledger/admit"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/flow"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/httpapi"
	"github.com/agentledger/agentledger/janitor"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/metrics"
	"github.com/agentledger/agentledger/notify/outbox"
	"github.com/agentledger/agentledger/operator"
	"github.com/agentledger/agentledger/schedule"
	"github.com/agentledger/agentledger/tenants"
	"github.com/agentledger/agentledger/waits"
	"github.com/agentledger/agentledger/webhooks"
)

// services run beside the worker pool until their context ends: the
// notification dispatcher, the cron scheduler, the retention janitor and
// the HTTP server (API, webhooks, health, metrics).
type services struct {
	runs []func(context.Context) error
	ln   net.Listener
	// closers run once every run has returned.
	closers []func()
}

// buildServices checks the configuration of every service and binds the
// listener, so that a mistake stops agentd before it claims any task.
func buildServices(cfg *Config, db *pgxpool.Pool, limits *flow.Limiter, m *metrics.Metrics, owner string, ln net.Listener,
	extra map[string]http.Handler, door *admit.Door, gs grants.Source,
	mcp func() map[string]string, log *slog.Logger) (*services, error) {
	s := &services{ln: ln}
	disp, err := dispatcher(cfg, db, limits, owner, m, log)
	if err != nil {
		return nil, err
	}
	if disp != nil {
		s.runs = append(s.runs, disp.Run)
	}
	if follow := approvalsFollow(cfg, db, log); follow != nil {
		s.runs = append(s.runs, follow)
	}
	if cfg.Maintenance.NoCron {
		log.Info("cron: schedules not fired here: " + setting("Maintenance.NoCron", "--no-cron"))
	} else {
		sch, err := schedule.NewScheduler(db, schedule.Config{Logger: log, OnFire: m.CronFire, Door: door})
		if err != nil {
			return nil, &ConfigError{err}
		}
		s.runs = append(s.runs, sch.Run)
	}
	if cfg.Maintenance.NoJanitor {
		log.Info("janitor: not run here: " + setting("Maintenance.NoJanitor", "--no-janitor"))
	} else {
		j, err := janitor.New(db, sweeps(cfg, db), janitor.Config{Interval: cfg.Maintenance.JanitorInterval, Logger: log, OnDelete: m.Janitor})
		if err != nil {
			return nil, &ConfigError{err}
		}
		s.runs = append(s.runs, j.Run)
	}
	if ln == nil {
		log.Info("http: no API server: " + setting("API.Listen", "--listen") + " is empty")
		return s, nil
	}
	// The API has connections of its own: a flood of requests (or of
	// made-up tokens) waits for those, never for the worker pool's.
	pcfg := db.Config().Copy()
	pcfg.MaxConns, pcfg.MinConns = cfg.API.MaxConns, 0
	if pcfg.MaxConns <= 0 {
		pcfg.MaxConns = DefaultAPIMaxConns
	}
	apiDB, err := pgxpool.NewWithConfig(context.Background(), pcfg)
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, apiDB.Close)
	ready := newReadiness(context.Background(), apiDB)
	s.runs = append(s.runs, ready.run)
	api, err := apiServer(cfg, apiDB, m, door, mcp, ready, log)
	if err != nil {
		apiDB.Close()
		return nil, err
	}
	if err := mountSlackInteractions(cfg, apiDB, api, m, log); err != nil {
		apiDB.Close()
		return nil, err
	}
	for _, pattern := range slices.Sorted(maps.Keys(extra)) {
		if err := api.Mount(pattern, extra[pattern]); err != nil {
			apiDB.Close()
			return nil, &ConfigError{fmt.Errorf("daemon: route %q: %w", pattern, err)}
		}
	}
	log.Info("http: serving the API", "addr", "http://"+s.ln.Addr().String(), "idempotency_key_required", !cfg.API.IdempotencyKeyOptional,
		"start_at_enqueue", !cfg.Worker.NoStartAtEnqueue)
	s.runs = append(s.runs, func(ctx context.Context) error { return api.Serve(ctx, s.ln) })
	return s, nil
}

// listen binds --listen, or returns nil when it is empty.
func listen(cfg *Config) (net.Listener, error) {
	if cfg.API.Listen == "" {
		return nil, nil
	}
	return Listen(cfg.API.Listen)
}

// run runs every service until ctx ends and they have stopped; the first
// error of a service that stops early is returned.
func (s *services) run(ctx context.Context) error {
	var wg sync.WaitGroup
	errs := make([]error, len(s.runs))
	for i, run := range s.runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = run(ctx)
		}()
	}
	wg.Wait()
	for _, c := range s.closers {
		c()
	}
	return errors.Join(errs...)
}

// sweeps are the janitor's, with the configured windows (a zero one its
// default).
func sweeps(cfg *Config, db *pgxpool.Pool) []janitor.Sweep {
	l := ledger.New(db)
	r := cfg.Maintenance.Retain.withDefaults()
	return []janitor.Sweep{
		{Name: "ledger", Window: r.Ledger, Delete: func(ctx context.Context, w time.Duration, n int) (int64, error) {
			return l.Expire(ctx, claims.LedgerRetention{}, ledger.Retention{Default: w}, n)
		}},
		{Name: "outbox", Window: r.Outbox, Delete: outbox.NewStore(db).DeleteSettled},
		{Name: "inbox", Window: r.Inbox, Delete: webhooks.ExpireInbox(db)},
		{Name: "idempotency_keys", Window: r.IdempotencyKeys, Delete: httpapi.ExpireKeys(db)},
		{Name: "tasks", Window: r.Tasks, Delete: claims.New(db).DeleteFinished},
		// Signals live as long as the ledger rows of the waits they ended.
		{Name: "signals", Window: r.Ledger, Delete: waits.NewStore(db).SweepSignals},
	}
}

// apiServer is the HTTP API with webhooks, /healthz, /readyz and /metrics.
func apiServer(cfg *Config, db *pgxpool.Pool, m *metrics.Metrics, door *admit.Door,
	mcp func() map[string]string, ready *readiness, log *slog.Logger) (*httpapi.Server, error) {
	var hooks http.Handler
	if cfg.API.HooksFile != "" {
		sources, err := webhooks.LoadSources(cfg.API.HooksFile)
		if err != nil {
			return nil, &ConfigError{err}
		}
		h, err := webhooks.New(db, sources, webhooks.Config{Logger: log, OnDelivery: m.Webhook, Door: door})
		if err != nil {
			return nil, &ConfigError{err}
		}
		hooks = h
		log.Info("http: webhooks", "sources", len(sources))
		warnUnknownTenants(db, sources, log)
	}
	proxies, err := httpapi.ParseTrustedProxies(cfg.API.TrustedProxies)
	if err != nil {
		return nil, &ConfigError{fmt.Errorf("%s: %w", setting("API.TrustedProxies", "--trusted-proxies"), err)}
	}
	api, err := httpapi.New(httpapi.Config{
		DB: db, Tenants: tenants.NewStore(db), Claims: claims.New(db), Operator: operator.New(db), Hooks: hooks,
		TrustedProxies:         proxies,
		IdempotencyKeyOptional: cfg.API.IdempotencyKeyOptional, Logger: log, Observe: m.HTTP, Door: door,
	})
	if err != nil {
		return nil, &ConfigError{err}
	}
	m.WatchDatabase(db)
	metricsHandler, err := guardMetrics(cfg.API.MetricsTokenFile, api, promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{}))
	if err != nil {
		return nil, &ConfigError{err}
	}
	api.Handle("GET /metrics", metricsHandler)
	api.Handle("GET /healthz", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeStatus(w, http.StatusOK, map[string]any{"status": "ok"})
	}))
	api.Handle("GET /readyz", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := map[string]any{"status": "ready"}
		if states := mcp(); len(states) > 0 {
			body["mcp_servers"] = states // a server down fails its tools' calls, not the daemon
		}
		if problem := ready.why(r.Context()); problem != "" {
			body["status"], body["reason"] = "unavailable", problem
			writeStatus(w, http.StatusServiceUnavailable, body)
			return
		}
		writeStatus(w, http.StatusOK, body)
	}))
	return api, nil
}

func writeStatus(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// tenantKnown reports whether tenant t is known as agentctl's tenant
// commands know one: the operator's own, a tenant row, or a stored grant
// of its own (a config file's, for a tenant to come).
func tenantKnown(ctx context.Context, db *pgxpool.Pool, t string) (bool, error) {
	if t == agentledger.OperatorTenant {
		return true, nil
	}
	if known, err := tenants.NewStore(db).Exists(ctx, t); err != nil || known {
		return known, err
	}
	r, err := grants.NewStore(db).Record(ctx, t)
	return r != nil, err
}

// warnUnknownTenants warns of each webhook source whose tenant has neither
// a tenant row nor a grant: a mistyped name whose deliveries would become
// tasks and signals of a tenant nobody uses, waking none of the tasks
// they were meant for. A warning, not a refusal: the tenant may be added
// after the daemon starts. A look that fails says nothing.
func warnUnknownTenants(db *pgxpool.Pool, sources []webhooks.Source, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	seen := map[string]bool{}
	for _, src := range sources {
		t := src.Tenant
		if t == "" || seen[t] {
			continue
		}
		seen[t] = true
		if known, err := tenantKnown(ctx, db, t); err != nil || known {
			continue
		}
		log.Warn("webhook source names a tenant not known yet: its deliveries are that tenant's tasks and signals; "+
			"add it with agentctl tenant add, or correct the source", "source", src.Name, "tenant", t)
	}
}
