package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/agent"
	"github.com/agentledger/agentledger/approvals"
	"github.com/agentledger/agentledger/flow"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/metrics"
	"github.com/agentledger/agentledger/notify"
	"github.com/agentledger/agentledger/notify/console"
	"github.com/agentledger/agentledger/notify/outbox"
	"github.com/agentledger/agentledger/notify/slack"
	"github.com/agentledger/agentledger/pgembed"
	"github.com/agentledger/agentledger/saga"
	"github.com/agentledger/agentledger/steps"
	"github.com/agentledger/agentledger/tools"
	"github.com/agentledger/agentledger/waits"
	"github.com/agentledger/agentledger/worker"
)

// builtinKinds are the kinds every daemon serves; a registered kind may not
// take their names.
var builtinKinds = []string{"noop", "echo", "sleep", "steps", agent.Kind}

// handlers builds the task kinds this daemon serves: the built-in kinds,
// steps and agent (whose tools — the built-in ones and those registered —
// and model calls run through the ledger), and the registered kinds.
func (d *Daemon) handlers(db *pgxpool.Pool, m *metrics.Metrics) (map[string]worker.Handler, *tools.Registry, error) {
	cfg := &d.cfg
	headers, err := hostHeaders(cfg.HTTPTools.HostHeadersFile)
	if err != nil {
		return nil, nil, err
	}
	all, err := builtinTools(httpConfig(cfg, headers), d.door, waits.NewStore(db))
	if err != nil {
		return nil, nil, &ConfigError{err}
	}
	warnUnsentHeaders(cfg.Logger, all)
	// RegisterTool refused a name taken by these or registered before.
	reg := tools.NewRegistry(append(all, d.tools...)...)
	// The door refuses literal arguments a tool would refuse at run.
	d.door.Args = func(tool string, args json.RawMessage) error {
		if t, err := reg.Get(tool); err == nil {
			if c, ok := t.(tools.ArgsChecker); ok {
				return c.CheckArgs(args)
			}
		}
		return nil
	}
	// The door refuses a compensation of a pure call, or by one, as the
	// run would, where it reads no live pool's classes.
	d.door.Pure = reg.Pure
	// The door refuses a literal URL the HTTP tools would refuse at run.
	d.door.Reach = func(tool string, u *url.URL) error {
		if t, err := reg.Get(tool); err == nil {
			if h, ok := t.(*tools.HTTPTool); ok {
				return h.Refusal(u)
			}
		}
		return nil
	}
	l := ledger.New(db)
	l.Observe = m.Effect
	if cfg.Hooks.ObserveEffect != nil {
		l.Observe = func(op string, class ledger.Class, outcome string) {
			m.Effect(op, class, outcome)
			cfg.Hooks.ObserveEffect(op, class, outcome)
		}
	}
	// One effect path for every kind: lookup, trace, grant, effect, flow,
	// the embedder's interceptors, the ledger (tools.Path). Its flow stage
	// books the calls of the HTTP and MCP tools (targets http:<origin>,
	// mcp:<server>) on the fleet's limits; a call over its limit defers
	// its task.
	// The approval gate comes first among the interceptors: an effect a
	// person has not approved goes no further.
	gate := &approvals.Gate{Store: approvals.NewStore(db), Policy: approvalPolicy(cfg.Policy, cfg.MCPServers), Requested: approvalsRequested(cfg, db),
		Performed: approvalsPerformed(db),
		Decided: func(_ context.Context, r approvals.Request) {
			if r.DecidedAt != nil {
				m.ApprovalDecided(r.DecidedVia, r.State, r.DecidedAt.Sub(r.RequestedAt))
			}
		}}
	path := &tools.Path{Ledger: l, Tools: reg, Grants: d.grants, Gate: d.limits,
		Interceptors: append([]tools.Interceptor{gate.Intercept}, d.intercept...)}
	runner := steps.New(l, reg)
	runner.Grants = d.grants
	runner.Path = path
	if err := checkCompensations(cfg.Policy.Compensations, reg); err != nil {
		return nil, nil, err
	}
	agentConfig := modelConfig(cfg)
	agentConfig.Grants, agentConfig.Gate, agentConfig.Compensations, agentConfig.Path = d.grants, d.limits, cfg.Policy.Compensations, path
	agentConfig.Logger = cfg.Logger
	kinds := map[string]worker.Handler{
		"noop":  worker.HandlerFunc(tools.Noop),
		"echo":  worker.HandlerFunc(tools.Echo),
		"sleep": worker.HandlerFunc(tools.Sleep),
		"steps": runner,
	}
	kinds[agent.Kind] = agent.New(agentConfig, l, reg)
	for name, h := range d.kinds {
		kinds[name] = h
	}
	// Every kind's compensation phase is the same: undo what its effects
	// declared, from the journal.
	undo := &saga.Undoer{Ledger: l, Journal: l, Tools: reg, Grants: d.grants, Path: path}
	for name, h := range kinds {
		kinds[name] = saga.Phase(h, undo)
	}
	return kinds, reg, nil
}

// dispatcher delivers the outbox's notifications to Slack, or to the
// console sink without a token; nil with --no-dispatch.
func dispatcher(cfg *Config, db *pgxpool.Pool, limits *flow.Limiter, owner string, m *metrics.Metrics, log *slog.Logger) (*outbox.Dispatcher, error) {
	if cfg.Notify.NoDispatch {
		log.Info("notifications: not dispatched here: " + setting("Notify.NoDispatch", "--no-dispatch"))
		return nil, nil
	}
	sink, err := notificationSink(cfg, limits, cfg.Stdout, log)
	if err != nil {
		return nil, err
	}
	l := ledger.New(db)
	l.Observe = m.Effect
	d, err := outbox.NewDispatcher(outbox.NewStore(db), approvalsDeliverer(db, l, sink, notify.NewDeliverer(l, sink)), outbox.Config{
		Owner: owner, Concurrency: cfg.Notify.DispatchConcurrency, Lease: cfg.Notify.DispatchLease, Logger: log,
		OnSettle: m.Notification,
	})
	if err != nil {
		return nil, &ConfigError{err}
	}
	return d, nil
}

// notificationSink is Slack when a bot token is configured, else the
// console sink; both go through the ledger the same way.
func notificationSink(cfg *Config, limits *flow.Limiter, out io.Writer, log *slog.Logger) (notify.Sink, error) {
	if cfg.Notify.SlackToken == "" && cfg.Notify.SlackTokenFile == "" {
		sink, path, err := consoleSink(cfg, out)
		if err == nil {
			// The file is named in full: a daemon on a URL keeps it in the
			// default state directory, not its database's.
			log.Info("notifications: console sink; for Slack set "+setting("Notify.SlackToken", "AGENTLEDGER_SLACK_TOKEN"), "file", path)
		}
		return sink, err
	}
	// Posts and updates are paced by the fleet's limits too, so that any
	// number of daemons keep to one channel's pace between them.
	sink, err := slack.New(slack.Config{Token: cfg.Notify.SlackToken, TokenFile: cfg.Notify.SlackTokenFile,
		APIURL: cfg.Notify.SlackAPIURL, Logger: log, PerChannelInterval: cfg.Notify.SlackInterval, WorkspaceRate: float64(cfg.Notify.SlackRate),
		Fleet: limits})
	if err != nil {
		return nil, &ConfigError{err}
	}
	if err := checkSlack(sink, slackTokenSource(cfg), log); err != nil {
		return nil, err
	}
	return sink, nil
}

// slackCheckTimeout bounds the token check at start.
const slackCheckTimeout = 15 * time.Second

// checkSlack asks Slack whom the token belongs to (auth.test) before any
// notification needs it. A token Slack refuses stops the daemon, naming
// where the token came from (never the token): every notification would
// fail. An unreachable Slack does not: tasks do not need Slack, and
// notifications wait in the outbox, retried with backoff, so the daemon
// starts, says so, and stays ready (its API serves tasks regardless).
func checkSlack(sink *slack.Sink, source string, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(context.Background(), slackCheckTimeout)
	defer cancel()
	id, err := sink.Check(ctx)
	var perm *agentledger.PermanentError
	switch {
	case errors.As(err, &perm):
		return &ConfigError{fmt.Errorf("notifications: Slack refused the bot token in %s: %w", source, err)}
	case err != nil:
		log.Warn("notifications: Slack, but its bot token could not be checked: notifications wait in the outbox "+
			"and are retried; a wrong token fails them (agentctl notifications redeliver sends them again)",
			"token", source, "err", err)
	case id.BotID == "":
		log.Warn("notifications: Slack, with a token that is not a bot token (xoxb-)", "token", source, "team", id.Team, "user", id.User)
	default:
		log.Info("notifications: Slack", "team", id.Team, "bot_user", id.User, "token", source)
	}
	return nil
}

// slackTokenSource names where the Slack token came from, for messages.
func slackTokenSource(cfg *Config) string {
	if cfg.Notify.SlackTokenFile != "" {
		return "the file " + cfg.Notify.SlackTokenFile + ", " + setting("Notify.SlackTokenFile", "--slack-token-file")
	}
	return setting("Notify.SlackToken", "AGENTLEDGER_SLACK_TOKEN")
}

// consoleSink is where notifications go until Slack is configured.
func consoleSink(cfg *Config, out io.Writer) (notify.Sink, string, error) {
	path := cfg.Notify.File
	if path == "" {
		dir := cfg.Database.StateDir
		if dir == "" {
			var err error
			if dir, err = pgembed.DefaultStateDir(); err != nil {
				return nil, "", err
			}
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, "", fmt.Errorf("notification file: %w; the console sink keeps it in the state directory: set %s or %s",
				err, setting("Database.StateDir", "--state-dir"), setting("Notify.File", "--notify-file"))
		}
		path = filepath.Join(dir, "notifications.jsonl")
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	sink, err := console.New(out, path)
	return sink, path, err
}

// hostHeaders reads the secret per-host headers. Errors name the file, never
// its contents.
func hostHeaders(path string) (map[string]map[string]string, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, &ConfigError{fmt.Errorf("%s: %w", setting("HTTPTools.HostHeadersFile", "--http-host-headers-file"), err)}
	}
	var h map[string]map[string]string
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, &ConfigError{fmt.Errorf("%s %s: not a JSON object of host to header map",
			setting("HTTPTools.HostHeadersFile", "--http-host-headers-file"), path)}
	}
	return h, nil
}

// checkCompensations refuses a configured compensation whose tool is pure
// whatever its arguments (tools.Classed), a wait tool say: it would undo
// nothing, and every task it was declared for would park at its undo.
func checkCompensations(cs map[string]saga.Compensation, reg *tools.Registry) error {
	classes := reg.Classes()
	for _, name := range slices.Sorted(maps.Keys(cs)) {
		if c := cs[name]; classes[c.Tool] == string(ledger.Pure) {
			return &ConfigError{fmt.Errorf("%s: the compensation of %s calls %s, which changes nothing, so it undoes nothing: "+
				"compensate with a call that does", setting("Policy.Compensations", "[[compensation]] tables"), name, c.Tool)}
		}
	}
	return nil
}

// warnUnsentHeaders warns of secret headers that neither HTTP tool ever
// sends, no allow-list holding their origin: a mistyped key, or a bare
// host (https) for a target the lists allow over http. The calls would
// go without them, and the target answer 401.
func warnUnsentHeaders(log *slog.Logger, ts []tools.Tool) {
	var unsent []string // the origins every HTTP tool leaves unsent
	first := true
	for _, t := range ts {
		h, ok := t.(*tools.HTTPTool)
		if !ok {
			continue
		}
		mine := h.Unsent()
		if first {
			unsent, first = mine, false
		}
		unsent = slices.DeleteFunc(unsent, func(o string) bool { return !slices.Contains(mine, o) })
	}
	if len(unsent) > 0 {
		log.Warn("secret headers for origins no HTTP tool may call are never sent: key each as the allow-list "+
			"allows its origin (a bare host is https; write http://host:port for a target in clear)",
			"setting", setting("HTTPTools.HostHeadersFile", "--http-host-headers-file"), "origins", unsent)
	}
}

// httpConfig is the HTTP tools' configuration from cfg.HTTPTools.
func httpConfig(cfg *Config, headers map[string]map[string]string) tools.HTTPConfig {
	return tools.HTTPConfig{AllowedHosts: cfg.HTTPTools.AllowedHosts, UnsafeAllowedHosts: cfg.HTTPTools.UnsafeAllowedHosts, HostHeaders: headers,
		Timeout: cfg.HTTPTools.Timeout, Timeouts: cfg.HTTPTools.Timeouts}
}

// modelConfig is the agent's endpoint configuration from cfg.Model.
func modelConfig(cfg *Config) agent.Config {
	return agent.Config{BaseURL: cfg.Model.BaseURL, APIKey: cfg.Model.APIKey, AzureAPIVersion: cfg.Model.AzureAPIVersion,
		Model: cfg.Model.Name, RequestTimeout: cfg.Model.Timeout, MaxSteps: cfg.Model.MaxSteps, MaxAnswerTokens: cfg.Model.MaxAnswerTokens}
}
