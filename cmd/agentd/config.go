package main

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/agentledger/agentledger/agent"
	"github.com/agentledger/agentledger/daemon"
	"github.com/agentledger/agentledger/httpapi"
	"github.com/agentledger/agentledger/internal/secretfmt"
	"github.com/agentledger/agentledger/tools"
)

// config is agentd's configuration: flags, each defaulting to an
// environment variable, each defaulting to a built-in value.
type config struct {
	daemon.Config
	LogLevel  slog.Level
	LogFormat string
	Demo      bool
}

// usageError is a configuration mistake: exit code 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// setting is one row of the configuration table: flag, environment variable,
// default and help. docs/configuration.md's table lists the same rows (internal/test/readme's TestConfigurationTable checks it).
type setting struct {
	flag, env, kind, def, help string
}

// value is a flag whose parsing waits for parse(), so that a bad value from
// the environment and one from the command line get the same clear error.
type value struct {
	v, typ string
	from   string // where a value not given as a flag came from, if a file
}

func (v *value) String() string     { return v.v }
func (v *value) Set(s string) error { v.v = s; return nil }
func (v *value) Type() string       { return v.typ }

var settings = []setting{
	{"config", "AGENTLEDGER_CONFIG", "string", "", "TOML file of settings, keyed by flag name (lease = \"30s\"); flags and environment variables override it"},
	{"database-url", "DATABASE_URL", "string", "", "PostgreSQL URL; empty starts or joins the embedded cluster"},
	{"state-dir", "AGENTLEDGER_STATE_DIR", "string", "", "state directory of the embedded cluster; empty: /var/lib/agentledger as root, else ~/.local/state/agentledger"},
	{"no-migrate", "AGENTLEDGER_NO_MIGRATE", "bool", "false", "do not apply pending migrations at start"},
	{"worker-id", "AGENTLEDGER_WORKER_ID", "string", "", "name of this daemon in leases and attempts; empty: host-pid-random"},
	{"queues", "AGENTLEDGER_QUEUES", "string", "default", "comma-separated queues to work"},
	{"concurrency", "AGENTLEDGER_CONCURRENCY", "int", "100", "tasks run at once per queue"},
	{"batch-size", "AGENTLEDGER_BATCH_SIZE", "int", "100", "most tasks claimed in one statement"},
	{"lease", "AGENTLEDGER_LEASE", "duration", "30s", "lease length; renewed by heartbeats"},
	{"heartbeat", "AGENTLEDGER_HEARTBEAT", "duration", "", "interval between lease renewals; empty: lease/3"},
	{"poll-interval", "AGENTLEDGER_POLL_INTERVAL", "duration", "1s", "claim interval when no notification arrives"},
	{"poll-only", "AGENTLEDGER_POLL_ONLY", "bool", "false", "no LISTEN/NOTIFY (for PgBouncer transaction pooling)"},
	{"no-start-at-enqueue", "AGENTLEDGER_NO_START_AT_ENQUEUE", "bool", "false", "queue every task submitted to the API for a claim, even when this daemon's workers are idle"},
	{"grace", "AGENTLEDGER_GRACE", "duration", "10s", "how long shutdown waits for running tasks before releasing them"},
	{"max-conns", "AGENTLEDGER_MAX_CONNS", "int", "20", "connection pool size"},
	{"log-level", "AGENTLEDGER_LOG_LEVEL", "string", "info", "debug, info, warn or error"},
	{"log-format", "AGENTLEDGER_LOG_FORMAT", "string", "text", "text or json"},
	{"llm-base-url", "AGENTLEDGER_LLM_BASE_URL", "string", "", "OpenAI-compatible endpoint for agent tasks (e.g. http://127.0.0.1:8080/v1); empty: agent tasks fail with a clear error. The API key is read from AGENTLEDGER_LLM_API_KEY only"},
	{"llm-azure-api-version", "AGENTLEDGER_LLM_AZURE_API_VERSION", "string", "", "Azure OpenAI api-version (e.g. 2024-10-21); set, --llm-base-url is the resource's endpoint (https://<resource>.openai.azure.com), a model name is its deployment's name, and the key goes in an api-key header"},
	{"llm-model", "AGENTLEDGER_LLM_MODEL", "string", "", "model agent tasks use unless their payload names one"},
	{"llm-timeout", "AGENTLEDGER_LLM_TIMEOUT", "duration", "60s", "timeout of one model request"},
	{"llm-max-steps", "AGENTLEDGER_LLM_MAX_STEPS", "int", "10", "most model calls one agent task may make"},
	{"llm-max-answer-tokens", "AGENTLEDGER_LLM_MAX_ANSWER_TOKENS", "int", "4096", "most tokens one completion of a task under a token budget is told it may answer with (the model's output limit: endpoints refuse more)"},
	{"http-allowed-hosts", "AGENTLEDGER_HTTP_ALLOWED_HOSTS", "string", "", "comma-separated hosts the http_request tool may call: host[:port] (https), https://host[:port], http://host[:port] (in clear); empty allows none"},
	{"unsafe-http-allowed-hosts", "AGENTLEDGER_UNSAFE_HTTP_ALLOWED_HOSTS", "string", "", "hosts without idempotency support the unsafe_http tool may call; empty allows none"},
	{"http-timeout", "AGENTLEDGER_HTTP_TIMEOUT", "duration", "30s", "longest one http_request or unsafe_http call may take, its answer read; it holds its origin's concurrency slot no longer"},
	{"http-timeouts", "AGENTLEDGER_HTTP_TIMEOUTS", "string", "", "comma-separated timeouts of particular origins, overriding --http-timeout: origin=duration, the origin written as in the allow-list (https://reports.internal=2m,127.0.0.1:8443=5s)"},
	{"approve-unsafe", "AGENTLEDGER_APPROVE_UNSAFE", "bool", "false", "every unsafe effect (unsafe_http, a tool of class unsafe) waits for a person's approval before it is performed"},
	{"approve-tools", "AGENTLEDGER_APPROVE_TOOLS", "string", "", "comma-separated tools every call of which waits for a person's approval (refund,shop/charge), in steps and agent tasks alike"},
	{"approvers", "AGENTLEDGER_APPROVERS", "string", "", "comma-separated Slack user (U…) and group (S…) ids who may approve the calls --approve-unsafe and --approve-tools gate; empty: anyone in the channel; operators always may"},
	{"approval-timeout", "AGENTLEDGER_APPROVAL_TIMEOUT", "duration", "24h", "how long a request of --approve-unsafe or --approve-tools waits before it counts as denied"},
	{"http-host-headers-file", "AGENTLEDGER_HTTP_HOST_HEADERS_FILE", "string", "", `JSON file of secret headers per host, {"host": {"Authorization": "Bearer …"}}; never logged or stored`},
	{"notify-file", "AGENTLEDGER_NOTIFY_FILE", "string", "", "file the console notification sink appends to; empty: notifications.jsonl in the state directory (the default one when --database-url is set; agentd logs which file at start)"},
	{"slack-token-file", "AGENTLEDGER_SLACK_TOKEN_FILE", "string", "", "file holding the Slack bot token (or set AGENTLEDGER_SLACK_TOKEN); without a token notifications go to the console sink"},
	{"slack-api-url", "AGENTLEDGER_SLACK_API_URL", "string", "", "Slack Web API root; empty: Slack's"},
	{"slack-channel-interval", "AGENTLEDGER_SLACK_CHANNEL_INTERVAL", "duration", "1s", "least time between two posts or updates to one Slack channel (Slack allows about one a second)"},
	{"slack-workspace-rate", "AGENTLEDGER_SLACK_WORKSPACE_RATE", "int", "1", "posts and updates a second over all Slack channels (bursts of 3)"},
	{"approvals-channel", "AGENTLEDGER_APPROVALS_CHANNEL", "string", "approvals", "Slack channel (name or ID) where approval requests are posted with Approve and Deny buttons (without a Slack token the console sink prints them); empty: not posted"},
	{"slack-signing-secret-file", "AGENTLEDGER_SLACK_SIGNING_SECRET_FILE", "string", "", "file holding the Slack app's signing secret (or set AGENTLEDGER_SLACK_SIGNING_SECRET); with it the API serves Slack's clicks on approval requests at POST /slack/interactivity"},
	{"pgbouncer", "AGENTLEDGER_PGBOUNCER", "bool", "false", "DATABASE_URL is a transaction-pooling PgBouncer: poll only, prepare no statements, and do not migrate (run agentctl migrate up against PostgreSQL itself)"},
	{"pgbouncer-prepared", "AGENTLEDGER_PGBOUNCER_PREPARED", "bool", "false", "as --pgbouncer, for a PgBouncer that keeps prepared statements (1.21 or later, max_prepared_statements above 0): statements are prepared and their plans kept as on a direct connection; checked at start"},
	{"no-dispatch", "AGENTLEDGER_NO_DISPATCH", "bool", "false", "do not deliver notifications from the outbox here (other daemons do)"},
	{"dispatch-concurrency", "AGENTLEDGER_DISPATCH_CONCURRENCY", "int", "8", "notifications delivered at once"},
	{"dispatch-lease", "AGENTLEDGER_DISPATCH_LEASE", "duration", "1m", "how long a dispatcher holds a notification; must outlast a delivery and Slack's rate-limit waits"},
	{"demo", "AGENTLEDGER_DEMO", "bool", "false", "seed a small demo workload (idempotently) against a demo API served on --listen, and say where to look"},
	{"listen", "AGENTLEDGER_LISTEN", "string", "127.0.0.1:7450", "address of the HTTP API, webhooks, /healthz, /readyz and /metrics; empty: no HTTP server"},
	{"api-max-conns", "AGENTLEDGER_API_MAX_CONNS", "int", "4", "connection pool size of the HTTP API, apart from the workers' --max-conns"},
	{"metrics-token-file", "AGENTLEDGER_METRICS_TOKEN_FILE", "string", "", "file holding a bearer token that GET /metrics then requires (its figures name tenants, schedules and hook sources); empty: /metrics is open to whoever reaches --listen"},
	{"trusted-proxies", "AGENTLEDGER_TRUSTED_PROXIES", "string", "", "comma-separated reverse proxies (IP addresses or CIDR prefixes, such as 10.0.0.0/8,127.0.0.1) whose X-Forwarded-For names the client that failed authentications are counted against; empty: X-Forwarded-For is ignored and the peer's address counts"},
	{"idempotency-key-optional", "AGENTLEDGER_IDEMPOTENCY_KEY_OPTIONAL", "bool", "false", "accept mutating API requests without an Idempotency-Key (each then acts anew)"},
	{"hooks-file", "AGENTLEDGER_HOOKS_FILE", "string", "", "JSON file of webhook sources (each: name, type github|slack|hmac, secret_env or secret_file, and the task a delivery queues as kind, queue, tenant, payload…); empty: no webhooks"},
	{"no-cron", "AGENTLEDGER_NO_CRON", "bool", "false", "do not fire cron schedules here (other daemons do)"},
	{"no-janitor", "AGENTLEDGER_NO_JANITOR", "bool", "false", "do not run the retention janitor here (one daemon at a time runs it anyway)"},
	{"janitor-interval", "AGENTLEDGER_JANITOR_INTERVAL", "duration", "10m", "time between retention runs"},
	{"retain-ledger", "AGENTLEDGER_RETAIN_LEDGER", "duration", "168h", "ledger rows outlive their finished task this long; a replay needs them (a week of operator replay, longer than GitHub's and Stripe's redelivery windows)"},
	{"retain-tasks", "AGENTLEDGER_RETAIN_TASKS", "duration", "720h", "finished tasks are kept this long (their attempts too)"},
	{"retain-outbox", "AGENTLEDGER_RETAIN_OUTBOX", "duration", "168h", "delivered or failed notification events are kept this long"},
	{"retain-inbox", "AGENTLEDGER_RETAIN_INBOX", "duration", "168h", "webhook delivery ids are kept this long; a redelivery after it makes a new task (GitHub redelivers up to 3 days)"},
	{"retain-idempotency-keys", "AGENTLEDGER_RETAIN_IDEMPOTENCY_KEYS", "duration", "24h", "API Idempotency-Key records are kept this long (as Stripe does); a retry after it makes a new task"},
}

// register declares every flag, its default taken from the environment
// when set there.
func register(fs *pflag.FlagSet, getenv func(string) string) {
	for _, s := range settings {
		def := s.def
		if v := getenv(s.env); v != "" {
			def = v
		}
		f := fs.VarPF(&value{v: def, typ: s.kind}, s.flag, "", fmt.Sprintf("%s (env %s)", s.help, s.env))
		if strings.HasSuffix(s.flag, "-url") {
			// --help shows a default taken from the environment: a
			// DATABASE_URL's password must not be part of it.
			f.DefValue = secretfmt.URL(def)
		}
		if s.kind == "bool" {
			f.NoOptDefVal = "true" // --poll-only alone means true
		}
	}
}

// parse reads the flags, then the config file for the settings neither a
// flag nor the environment gave, into a config.
func parse(fs *pflag.FlagSet, getenv func(string) string) (*config, error) {
	path := strings.TrimSpace(fs.Lookup("config").Value.String())
	if path != "" {
		if err := applyFile(fs, getenv, path); err != nil {
			return nil, &usageError{err}
		}
	}
	c, err := parseFlags(fs)
	if err != nil || path == "" {
		return c, err
	}
	if err = tablesFromFile(path, &c.Config); err != nil {
		return nil, &usageError{err}
	}
	return c, nil
}

// parseFlags reads the flags into a config, naming the flag or variable at fault.
func parseFlags(fs *pflag.FlagSet) (*config, error) {
	var c config
	var errs []string
	env := map[string]string{}
	for _, s := range settings {
		env[s.flag] = s.env
	}
	// label names where a bad value came from: a default is never bad, so
	// an unchanged flag took it from the environment.
	label := func(name string) string {
		if fs.Changed(name) {
			return "--" + name
		}
		if v := fs.Lookup(name).Value.(*value); v.from != "" {
			return v.from
		}
		return env[name]
	}
	str := func(name string) string { return strings.TrimSpace(fs.Lookup(name).Value.String()) }
	dur := func(name string, d *time.Duration) {
		if v := str(name); v != "" {
			x, err := time.ParseDuration(v)
			if err != nil || x <= 0 {
				errs = append(errs, fmt.Sprintf("%s: %q is not a positive duration like 30s or 5m", label(name), v))
				return
			}
			*d = x
		}
	}
	num := func(name string, n *int) {
		if v := str(name); v != "" {
			x, err := strconv.Atoi(v)
			if err != nil || x <= 0 {
				errs = append(errs, fmt.Sprintf("%s: %q is not a positive integer", label(name), v))
				return
			}
			*n = x
		}
	}
	boolean := func(name string, b *bool) {
		if v := str(name); v != "" {
			x, err := strconv.ParseBool(v)
			if err != nil {
				errs = append(errs, fmt.Sprintf("%s: %q is not true or false", label(name), v))
				return
			}
			*b = x
		}
	}
	c.Database.URL = str("database-url")
	c.Model.BaseURL = str("llm-base-url")
	c.Model.Name = str("llm-model")
	c.Model.AzureAPIVersion = str("llm-azure-api-version")
	ac := agent.Config{BaseURL: c.Model.BaseURL, Model: c.Model.Name, AzureAPIVersion: c.Model.AzureAPIVersion}
	if err := ac.Check(); err != nil {
		if c.Model.AzureAPIVersion != "" {
			errs = append(errs, fmt.Sprintf("%s: %v", label("llm-azure-api-version"), err))
		} else {
			errs = append(errs, fmt.Sprintf("%s: %v", label("llm-base-url"), err))
		}
	}
	dur("llm-timeout", &c.Model.Timeout)
	num("llm-max-steps", &c.Model.MaxSteps)
	num("llm-max-answer-tokens", &c.Model.MaxAnswerTokens)
	c.HTTPTools.AllowedHosts = list(str("http-allowed-hosts"))
	c.HTTPTools.UnsafeAllowedHosts = list(str("unsafe-http-allowed-hosts"))
	for _, name := range []string{"http-allowed-hosts", "unsafe-http-allowed-hosts"} {
		for _, h := range list(str(name)) {
			if err := tools.CheckAllowedHost(h); err != nil {
				errs = append(errs, fmt.Sprintf("%s: %v", label(name), err))
			}
		}
	}
	c.HTTPTools.HostHeadersFile = str("http-host-headers-file")
	boolean("approve-unsafe", &c.Policy.ApproveUnsafe)
	gate := &tools.Approval{Timeout: tools.DefaultApprovalTimeout, OnTimeout: "deny", Approvers: list(str("approvers"))}
	if err := (&tools.Approval{Approvers: gate.Approvers}).Check(); err != nil {
		errs = append(errs, fmt.Sprintf("%s: %v", label("approvers"), err))
	}
	dur("approval-timeout", &gate.Timeout)
	if gate.Timeout > tools.MaxApprovalTimeout {
		errs = append(errs, fmt.Sprintf("%s: %s is longer than %s", label("approval-timeout"), gate.Timeout, tools.MaxApprovalTimeout))
	}
	c.Policy.Approval = gate
	for _, name := range list(str("approve-tools")) {
		if c.Policy.ToolApprovals == nil {
			c.Policy.ToolApprovals = map[string]*tools.Approval{}
		}
		c.Policy.ToolApprovals[name] = gate
	}
	dur("http-timeout", &c.HTTPTools.Timeout)
	for _, e := range list(str("http-timeouts")) {
		origin, d, ok := strings.Cut(e, "=")
		x, err := time.ParseDuration(strings.TrimSpace(d))
		if !ok || strings.TrimSpace(origin) == "" || err != nil || x <= 0 {
			errs = append(errs, fmt.Sprintf("%s: %q must be origin=duration, as in https://reports.internal=2m", label("http-timeouts"), e))
			continue
		}
		if c.HTTPTools.Timeouts == nil {
			c.HTTPTools.Timeouts = map[string]time.Duration{}
		}
		c.HTTPTools.Timeouts[strings.TrimSpace(origin)] = x
	}
	c.Notify.File = str("notify-file")
	c.Notify.SlackTokenFile = str("slack-token-file")
	c.Notify.SlackAPIURL = str("slack-api-url")
	dur("slack-channel-interval", &c.Notify.SlackInterval)
	num("slack-workspace-rate", &c.Notify.SlackRate)
	c.Notify.Approvals.Channel = str("approvals-channel")
	if ch := c.Notify.Approvals.Channel; len(ch) > 80 || strings.ContainsFunc(ch, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		errs = append(errs, fmt.Sprintf("%s: %q must be a Slack channel name or ID of at most 80 characters, without spaces", label("approvals-channel"), ch))
	}
	c.Notify.Approvals.SigningSecretFile = str("slack-signing-secret-file")
	c.Database.StateDir = str("state-dir")
	c.Worker.ID = str("worker-id")
	c.Worker.Queues = list(str("queues"))
	boolean("no-migrate", &c.Database.NoMigrate)
	boolean("poll-only", &c.Worker.PollOnly)
	boolean("no-start-at-enqueue", &c.Worker.NoStartAtEnqueue)
	// After the two it implies, which would otherwise set them back.
	boolean("pgbouncer", &c.Database.PgBouncer)
	boolean("pgbouncer-prepared", &c.Database.PgBouncerPrepared)
	if c.Database.PgBouncer || c.Database.PgBouncerPrepared {
		if c.Database.URL == "" {
			name := "pgbouncer"
			if c.Database.PgBouncerPrepared {
				name = "pgbouncer-prepared"
			}
			errs = append(errs, fmt.Sprintf("%s: set DATABASE_URL to the PgBouncer's address", label(name)))
		}
		c.Database.PgBouncer = true
		c.Worker.PollOnly, c.Database.NoMigrate = true, true
	}
	boolean("no-dispatch", &c.Notify.NoDispatch)
	num("dispatch-concurrency", &c.Notify.DispatchConcurrency)
	dur("dispatch-lease", &c.Notify.DispatchLease)
	boolean("demo", &c.Demo)
	c.API.Listen = str("listen")
	c.API.MetricsTokenFile = str("metrics-token-file")
	c.API.TrustedProxies = list(str("trusted-proxies"))
	if _, err := httpapi.ParseTrustedProxies(c.API.TrustedProxies); err != nil {
		errs = append(errs, fmt.Sprintf("%s: %v", label("trusted-proxies"), err))
	}
	var apiConns int
	num("api-max-conns", &apiConns)
	c.API.MaxConns = int32(apiConns)
	boolean("idempotency-key-optional", &c.API.IdempotencyKeyOptional)
	c.API.HooksFile = str("hooks-file")
	boolean("no-cron", &c.Maintenance.NoCron)
	boolean("no-janitor", &c.Maintenance.NoJanitor)
	dur("janitor-interval", &c.Maintenance.JanitorInterval)
	dur("retain-ledger", &c.Maintenance.Retain.Ledger)
	dur("retain-tasks", &c.Maintenance.Retain.Tasks)
	dur("retain-outbox", &c.Maintenance.Retain.Outbox)
	dur("retain-inbox", &c.Maintenance.Retain.Inbox)
	dur("retain-idempotency-keys", &c.Maintenance.Retain.IdempotencyKeys)
	num("concurrency", &c.Worker.Concurrency)
	num("batch-size", &c.Worker.BatchSize)
	var maxConns int
	num("max-conns", &maxConns)
	c.Database.MaxConns = int32(maxConns)
	dur("lease", &c.Worker.Lease)
	dur("heartbeat", &c.Worker.Heartbeat)
	dur("poll-interval", &c.Worker.PollInterval)
	dur("grace", &c.Worker.Grace)
	if err := c.LogLevel.UnmarshalText([]byte(str("log-level"))); err != nil {
		errs = append(errs, fmt.Sprintf("%s: %q is not debug, info, warn or error", label("log-level"), str("log-level")))
	}
	switch c.LogFormat = str("log-format"); c.LogFormat {
	case "text", "json":
	default:
		errs = append(errs, fmt.Sprintf("%s: %q is not text or json", label("log-format"), c.LogFormat))
	}
	if len(errs) > 0 {
		return nil, &usageError{fmt.Errorf("%s", strings.Join(errs, "; "))}
	}
	return &c, nil
}

// list splits a comma-separated setting, dropping empty entries.
func list(v string) []string {
	var out []string
	for _, e := range strings.Split(v, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}
