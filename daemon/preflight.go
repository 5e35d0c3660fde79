package daemon

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/admit"
	"github.com/agentledger/agentledger/approvals/slackui"
	"github.com/agentledger/agentledger/httpapi"
	"github.com/agentledger/agentledger/notify"
	"github.com/agentledger/agentledger/notify/outbox"
	"github.com/agentledger/agentledger/notify/slack"
	"github.com/agentledger/agentledger/pgembed"
	"github.com/agentledger/agentledger/tools"
	"github.com/agentledger/agentledger/waits"
	"github.com/agentledger/agentledger/webhooks"
	"github.com/agentledger/agentledger/worker"
)

// The checks here need no database: Run makes them (and RegisterTool and
// Handle theirs) before a cluster is started or a schema migrated, so that
// a mistake costs nothing.

// checkConfig checks every setting that needs no database, so that Run
// refuses a mistake before it starts a cluster or migrates a schema. A
// part this daemon does not run (NoJanitor, NoDispatch, no API.Listen)
// is checked too: its settings are mistaken all the same.
func (d *Daemon) checkConfig() error {
	cfg := &d.cfg
	if cfg.Database.MaxConns < 0 || cfg.API.MaxConns < 0 {
		return &ConfigError{fmt.Errorf("a connection pool's size must not be negative (Database.MaxConns %d, API.MaxConns %d; 0 for the default)",
			cfg.Database.MaxConns, cfg.API.MaxConns)}
	}
	if err := checkSeeds(cfg); err != nil {
		return err
	}
	if err := checkApprovals(cfg.Policy); err != nil {
		return err
	}
	if err := modelConfig(cfg).Check(); err != nil {
		field := setting("Model.BaseURL", "--llm-base-url")
		if cfg.Model.AzureAPIVersion != "" {
			field = setting("Model.AzureAPIVersion", "--llm-azure-api-version")
		}
		return &ConfigError{fmt.Errorf("model endpoint, %s: %w", field, err)}
	}
	if err := checkNotNegative(cfg); err != nil {
		return err
	}
	if err := d.checkTools(); err != nil {
		return err
	}
	if err := checkStateDir(cfg); err != nil {
		return err
	}
	if err := checkWorker(cfg); err != nil {
		return err
	}
	// Built once, on a registry of their own, to see them taken: the
	// names, the env files and the headers files.
	if _, err := mcpSupervisors(cfg.MCPServers, tools.NewRegistry(), cfg.Logger); err != nil {
		return err
	}
	if err := checkNotify(cfg); err != nil {
		return err
	}
	return checkAPI(cfg)
}

// workerSettings are the worker pool's settings from cfg.Worker.
func workerSettings(cfg *Config) worker.Config {
	w := cfg.Worker
	return worker.Config{ID: w.ID, Queues: w.Queues, Concurrency: w.Concurrency, BatchSize: w.BatchSize, Lease: w.Lease,
		HeartbeatInterval: w.Heartbeat, PollInterval: w.PollInterval, PollOnly: w.PollOnly, Grace: w.Grace,
		ClaimCooldown: w.ClaimCooldown, Backoff: w.Backoff}
}

// workerFields name the worker pool's settings (worker.Config's errors
// name them so) as Config and agentd do.
var workerFields = map[string][2]string{
	"concurrency": {"Worker.Concurrency", "--concurrency"}, "batch_size": {"Worker.BatchSize", "--batch-size"},
	"poll_interval": {"Worker.PollInterval", "--poll-interval"}, "grace": {"Worker.Grace", "--grace"},
	"queues": {"Worker.Queues", "--queues"}, "lease": {"Worker.Lease", "--lease"}, "heartbeat_interval": {"Worker.Heartbeat", "--heartbeat"},
}

// checkWorker checks the worker pool's settings as worker.New will.
func checkWorker(cfg *Config) error {
	err := workerSettings(cfg).Check()
	var ie *agentledger.InvalidError
	if errors.As(err, &ie) {
		if f, ok := workerFields[ie.Field]; ok {
			return &ConfigError{fmt.Errorf("%s: %s", setting(f[0], f[1]), ie.Problem)}
		}
	}
	if err != nil {
		return &ConfigError{err}
	}
	return nil
}

// checkNotNegative refuses a negative duration or count among the
// settings whose zero is their default, which a part would take for its
// default unseen. (A negative Slack pace is none, as package slack has
// it.)
func checkNotNegative(cfg *Config) error {
	r, n := cfg.Maintenance.Retain, cfg.Notify
	for _, s := range []struct {
		field, agentd string
		d             time.Duration
		n             int
	}{
		{field: "Maintenance.JanitorInterval", agentd: "--janitor-interval", d: cfg.Maintenance.JanitorInterval},
		{field: "Maintenance.Retain.Ledger", agentd: "--retain-ledger", d: r.Ledger},
		{field: "Maintenance.Retain.Tasks", agentd: "--retain-tasks", d: r.Tasks},
		{field: "Maintenance.Retain.Outbox", agentd: "--retain-outbox", d: r.Outbox},
		{field: "Maintenance.Retain.Inbox", agentd: "--retain-inbox", d: r.Inbox},
		{field: "Maintenance.Retain.IdempotencyKeys", agentd: "--retain-idempotency-keys", d: r.IdempotencyKeys},
		{field: "Notify.DispatchConcurrency", agentd: "--dispatch-concurrency", n: n.DispatchConcurrency},
		{field: "Notify.Approvals.FollowInterval", d: n.Approvals.FollowInterval}, // no agentd setting
		{field: "Model.Timeout", agentd: "--llm-timeout", d: cfg.Model.Timeout},
		{field: "Model.MaxSteps", agentd: "--llm-max-steps", n: cfg.Model.MaxSteps},
		{field: "Model.MaxAnswerTokens", agentd: "--llm-max-answer-tokens", n: cfg.Model.MaxAnswerTokens},
	} {
		name := s.field
		if s.agentd != "" {
			name = setting(s.field, s.agentd)
		}
		switch {
		case s.d < 0:
			return &ConfigError{fmt.Errorf("%s %s: must not be negative (0 is the default)", name, s.d)}
		case s.n < 0:
			return &ConfigError{fmt.Errorf("%s %d: must not be negative (0 is the default)", name, s.n)}
		}
	}
	return nil
}

// checkNotify checks the notification settings, whether or not this
// daemon dispatches: the Slack token (the API's Slack interactivity uses
// it too), the dispatcher's and the signing secret.
func checkNotify(cfg *Config) error {
	n := cfg.Notify
	if n.SlackToken != "" || n.SlackTokenFile != "" {
		if _, err := slack.New(slack.Config{Token: n.SlackToken, TokenFile: n.SlackTokenFile, APIURL: n.SlackAPIURL}); err != nil {
			return &ConfigError{fmt.Errorf("%s, %s: %w", setting("Notify.SlackToken", "AGENTLEDGER_SLACK_TOKEN"),
				setting("Notify.SlackTokenFile", "--slack-token-file"), err)}
		}
	}
	if _, err := outbox.NewDispatcher(outbox.NewStore(nil), nil, outbox.Config{Owner: "check", Concurrency: n.DispatchConcurrency,
		Lease: n.DispatchLease}); err != nil {
		return &ConfigError{fmt.Errorf("%s: %w", setting("Notify.DispatchLease", "--dispatch-lease"), err)}
	}
	if _, err := signingSecret(&n.Approvals); err != nil {
		return &ConfigError{err}
	}
	return nil
}

// checkAPI checks the HTTP server's settings, whether or not it runs: its
// trusted proxies, its metrics token and its webhook sources.
func checkAPI(cfg *Config) error {
	if _, err := httpapi.ParseTrustedProxies(cfg.API.TrustedProxies); err != nil {
		return &ConfigError{fmt.Errorf("%s: %w", setting("API.TrustedProxies", "--trusted-proxies"), err)}
	}
	if cfg.API.MetricsTokenFile != "" {
		if _, err := metricsToken(cfg.API.MetricsTokenFile); err != nil {
			return &ConfigError{err}
		}
	}
	if cfg.API.HooksFile != "" {
		if _, err := webhooks.LoadSources(cfg.API.HooksFile); err != nil {
			return &ConfigError{fmt.Errorf("%s: %w", setting("API.HooksFile", "--hooks-file"), err)}
		}
	}
	return nil
}

// builtinTools are the tools every daemon has besides the registered ones:
// the built-ins, notify, and the wait tools.
func builtinTools(http tools.HTTPConfig, door *admit.Door, store *waits.Store) ([]tools.Tool, error) {
	ts, err := tools.Builtins(tools.BuiltinConfig{HTTP: http, Door: door})
	if err != nil {
		return nil, err
	}
	return append(append(ts, notify.NewTool()), waits.Tools(store)...), nil
}

// builtinToolNames are builtinTools' names, for RegisterTool's check (no
// configuration changes a name).
func builtinToolNames() []string {
	ts, _ := builtinTools(tools.HTTPConfig{}, nil, nil) // the zero HTTP configuration is valid: it allows no host
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Name()
	}
	return names
}

// reservedPaths are the daemon's own routes besides the API's /v1/….
var reservedPaths = []string{"/healthz", "/readyz", "/metrics", slackui.Path}

// checkRoute refuses a route of the program's under the API's paths, or
// one mine (the program's routes so far) does not take; else adds it to
// mine.
func checkRoute(mine *http.ServeMux, pattern string) error {
	if p := routePath(pattern); p == "/v1" || strings.HasPrefix(p, "/v1/") || slices.Contains(reservedPaths, p) {
		return fmt.Errorf("daemon: route %q: %s is the daemon's (the API's /v1/…, %s); serve yours elsewhere",
			pattern, p, strings.Join(reservedPaths, ", "))
	}
	if err := httpapi.TryHandle(mine, pattern, http.NotFoundHandler()); err != nil {
		return fmt.Errorf("daemon: route %q: %w", pattern, err)
	}
	return nil
}

// routePath is the path of a ServeMux pattern, "[METHOD ][HOST]/PATH".
func routePath(pattern string) string {
	p := pattern
	if i := strings.IndexAny(p, " \t"); i >= 0 {
		p = strings.TrimLeft(p[i:], " \t")
	}
	if j := strings.IndexByte(p, '/'); j >= 0 {
		return p[j:]
	}
	return ""
}

// checkTools builds the built-in tools once to see the HTTP tools'
// configuration taken (the allow-lists, the timeouts and the secret
// headers' file), and the compensations against them and the
// registered tools.
func (d *Daemon) checkTools() error {
	headers, err := hostHeaders(d.cfg.HTTPTools.HostHeadersFile)
	if err != nil {
		return err
	}
	ts, err := builtinTools(httpConfig(&d.cfg, headers), nil, nil)
	if err != nil {
		return &ConfigError{err}
	}
	// A model calls MCP tool "shop/charge" by the function name
	// shop__charge: a registered tool of that name would answer for it.
	for _, t := range d.tools {
		server, _, ok := strings.Cut(t.Name(), "__")
		if ok && slices.ContainsFunc(d.cfg.MCPServers, func(s MCPServer) bool { return s.Name == server }) {
			return &ConfigError{fmt.Errorf("tool %q: a model calls the tools of MCP server %q by names of that form (%s__<tool>): "+
				"name it otherwise", t.Name(), server, server)}
		}
	}
	return checkCompensations(d.cfg.Policy.Compensations, tools.NewRegistry(append(ts, d.tools...)...))
}

// checkStateDir refuses an embedded cluster's state directory that is a
// file, or lies under one: no cluster could live there.
func checkStateDir(cfg *Config) error {
	if cfg.Database.URL != "" {
		return nil
	}
	dir := cfg.Database.StateDir
	if dir == "" {
		var err error
		if dir, err = pgembed.DefaultStateDir(); err != nil {
			return &ConfigError{err}
		}
	}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, syscall.ENOTDIR):
		return &ConfigError{fmt.Errorf("%s %s: a part of the path is a file, not a directory",
			setting("Database.StateDir", "--state-dir or AGENTLEDGER_STATE_DIR"), dir)}
	case err == nil && !fi.IsDir():
		return &ConfigError{fmt.Errorf("%s %s: a file, not a directory", setting("Database.StateDir", "--state-dir or AGENTLEDGER_STATE_DIR"), dir)}
	}
	return nil
}
