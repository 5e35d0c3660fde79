package daemon

import (
	"context"
	"io"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/flow"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/metrics"
	"github.com/agentledger/agentledger/saga"
	"github.com/agentledger/agentledger/tenants"
	"github.com/agentledger/agentledger/tools"
	"github.com/agentledger/agentledger/worker"
)

// Config is the whole daemon's configuration, one group per part it
// builds. The zero Config is agentd's defaults with an embedded database
// and no HTTP server: each zero field, in every group, takes the default
// of the package it configures (agentd's flags document each).
type Config struct {
	Database    Database
	Worker      Worker
	Model       Model
	HTTPTools   HTTPTools
	Notify      Notifications
	API         API
	Maintenance Maintenance
	Policy      Policy

	// MCPServers are MCP tool servers whose tools steps and agent tasks may
	// call; one that cannot be reached makes only its own tools fail.
	MCPServers []MCPServer

	// Hooks let a program watch and join the running daemon.
	Hooks Hooks

	// Logger receives the daemon's logs; default slog.Default().
	Logger *slog.Logger
	// Stdout is where the console sink prints; default os.Stdout.
	Stdout io.Writer
}

// Database is where the daemon's state lives (package database). The zero
// Database starts, or joins, the embedded cluster in the default state
// directory and migrates it.
type Database struct {
	// URL names the database; empty starts (or joins) the embedded
	// cluster in StateDir.
	URL string
	// StateDir is the embedded cluster's state directory; empty:
	// $AGENTLEDGER_STATE_DIR, else /var/lib/agentledger as root and
	// ~/.local/state/agentledger otherwise. A relative one is taken from
	// the working directory, as $AGENTLEDGER_STATE_DIR and agentd's
	// --state-dir are.
	StateDir string
	// MaxConns caps the daemon's own connection pool; 0: the default.
	MaxConns int32
	// PgBouncer: the database is reached through a transaction-pooling
	// PgBouncer (no LISTEN, no session state).
	PgBouncer bool
	// PgBouncerPrepared: the PgBouncer keeps prepared statements for its
	// clients (1.21 or later, max_prepared_statements above 0), so
	// statements are prepared and their plans kept as on a direct
	// connection; implies PgBouncer. Run refuses a database that does not
	// (database.ErrPoolerPassesPrepared).
	PgBouncerPrepared bool
	// NoMigrate refuses to start on an older schema instead of migrating.
	NoMigrate bool
}

// Worker is the worker pool: what it claims, how many at once, and how it
// holds and gives back leases (worker.Config, whose zero fields are its
// defaults).
type Worker struct {
	ID           string
	Queues       []string
	Concurrency  int
	BatchSize    int
	Lease        time.Duration
	Heartbeat    time.Duration
	PollInterval time.Duration
	PollOnly     bool
	// NoStartAtEnqueue queues every task submitted through the daemon's
	// API or Client for a claim. By default a task its pool would run now
	// (a slot free, nothing due left at its last claim) is leased to the
	// pool as it is inserted (claims.Store.EnqueueStart): no claim, no
	// notification.
	NoStartAtEnqueue bool
	Grace            time.Duration
	// ClaimCooldown and Backoff: worker.Config's (negative cooldown: none).
	ClaimCooldown time.Duration
	Backoff       agentledger.Backoff
}

// Model is the agent kind's model endpoint (agent.Config). The zero Model
// has none: agent tasks fail with a clear error, steps tasks run without
// one.
type Model struct {
	BaseURL string
	// APIKey is a secret: it is logged only as set or not.
	APIKey   string
	Name     string
	Timeout  time.Duration
	MaxSteps int
	// MaxAnswerTokens caps the max_tokens of a budgeted completion
	// (agent.Config.MaxAnswerTokens).
	MaxAnswerTokens int
	// AzureAPIVersion, when set, speaks Azure OpenAI's API shape to BaseURL
	// (agent.Config.AzureAPIVersion): Name then names the deployment.
	AzureAPIVersion string
}

// HTTPTools configures the built-in HTTP tools (tools.HTTPConfig). The
// zero HTTPTools allows no host.
type HTTPTools struct {
	AllowedHosts       []string
	UnsafeAllowedHosts []string
	// Timeout bounds one call (default 30 s); Timeouts override it per
	// origin, keyed as the allow-lists' entries.
	Timeout  time.Duration
	Timeouts map[string]time.Duration
	// HostHeadersFile is a JSON file of secret headers per host.
	HostHeadersFile string
}

// Notifications are the notification sink and the outbox dispatcher that
// delivers to it. The zero Notifications delivers here, to the console
// sink's file in the state directory; a Slack token makes Slack the sink.
type Notifications struct {
	// File is the console sink's file.
	File string
	// SlackToken is a secret; SlackTokenFile holds one (give one or the
	// other).
	SlackToken     string
	SlackTokenFile string
	SlackAPIURL    string
	SlackInterval  time.Duration
	SlackRate      int
	// NoDispatch leaves delivery to other daemons of the fleet.
	NoDispatch          bool
	DispatchConcurrency int
	DispatchLease       time.Duration
	// Approvals asks for approvals in Slack.
	Approvals Approvals
}

// API is the HTTP server: the API, webhooks, /healthz, /readyz and
// /metrics. The zero API runs no server.
type API struct {
	// Listen is its address (empty: no server) unless Listener is given,
	// already bound.
	Listen                 string
	Listener               net.Listener
	IdempotencyKeyOptional bool
	// HooksFile is a JSON file of webhook sources; empty: no webhooks.
	HooksFile string
	// MaxConns caps the HTTP API's own connection pool (default
	// DefaultAPIMaxConns), apart from Database.MaxConns.
	MaxConns int32
	// MetricsTokenFile holds a bearer token (a secret) that GET /metrics
	// then requires; empty leaves /metrics open to whoever reaches Listen.
	MetricsTokenFile string
	// TrustedProxies are the reverse proxies (IP addresses or CIDR
	// prefixes) whose X-Forwarded-For names the client a failed
	// authentication is counted against; empty: the peer's address counts.
	TrustedProxies []string
}

// Maintenance is the fleet's background services this daemon takes part
// in: the cron scheduler and the retention janitor. The zero Maintenance
// runs both with their default interval and windows.
type Maintenance struct {
	// NoCron and NoJanitor leave those services to other daemons.
	NoCron          bool
	NoJanitor       bool
	JanitorInterval time.Duration
	Retain          Retention
}

// Retention is the janitor's windows; zero takes each sweep's default
// (DefaultRetention's).
type Retention struct {
	Ledger, Tasks, Outbox, Inbox, IdempotencyKeys time.Duration
}

// DefaultRetention is each window's default, agentd's too: a week of
// ledger for an operator's replay (longer than GitHub's and Stripe's
// redelivery windows), a month of finished tasks, a week of notification
// events and webhook delivery ids, a day of API Idempotency-Keys (as
// Stripe keeps them).
var DefaultRetention = Retention{Ledger: 7 * 24 * time.Hour, Tasks: 30 * 24 * time.Hour, Outbox: 7 * 24 * time.Hour,
	Inbox: 7 * 24 * time.Hour, IdempotencyKeys: 24 * time.Hour}

// setting names one of Config's settings in a message for both of its
// readers: the field a program embedding the daemon sets, and agentd's
// flag ("--listen") or variable ("AGENTLEDGER_SLACK_TOKEN") that sets it.
func setting(field, agentd string) string {
	if strings.HasPrefix(agentd, "--") {
		return field + " (agentd " + agentd + ")"
	}
	return field + " (agentd's " + agentd + ")"
}

// withDefaults is r with each zero window DefaultRetention's.
func (r Retention) withDefaults() Retention {
	or := func(d, def time.Duration) time.Duration {
		if d == 0 {
			return def
		}
		return d
	}
	d := DefaultRetention
	return Retention{Ledger: or(r.Ledger, d.Ledger), Tasks: or(r.Tasks, d.Tasks), Outbox: or(r.Outbox, d.Outbox),
		Inbox: or(r.Inbox, d.Inbox), IdempotencyKeys: or(r.IdempotencyKeys, d.IdempotencyKeys)}
}

// Policy is what the configuration says tenants and tools may do, and how
// an agent task's calls are undone. The zero Policy stores nothing and
// leaves the stored grants, limits and shares as they are.
type Policy struct {
	// ApproveUnsafe gates every unsafe effect (an unsafe_http call, a
	// tool of class unsafe): a person decides before it is performed
	// (agentd's approve-unsafe), with Approval's approvers and timeout.
	ApproveUnsafe bool
	// Approval is the gate ApproveUnsafe applies; nil: the defaults
	// (anyone may decide, 24 h, deny on timeout).
	Approval *tools.Approval
	// ToolApprovals gate every call of the tools they name ("refund",
	// "shop/charge"), in steps and agent tasks alike, unless the call
	// declares a gate of its own (agentd's approve-tools). Run refuses a
	// nil gate, and one (Approval too) that tools.Approval.Check refuses.
	ToolApprovals map[string]*tools.Approval

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
}

// Hooks are a program's ways into the running daemon, beside the kinds,
// tools and routes it registers. The zero Hooks watches nothing and makes
// the daemon its own metrics.
type Hooks struct {
	// Observer and ObserveEffect, when set, are told what the worker pool
	// does and how each effect of steps and agent tasks ended, beside the
	// daemon's metrics (a benchmark counts finished tasks with them).
	Observer      worker.Observer
	ObserveEffect func(operation string, class ledger.Class, outcome string)
	// Metrics are the daemon's collectors (served at /metrics); nil makes
	// new ones. Give them to read the figures in-process or to serve them
	// from a registry of your own.
	Metrics *metrics.Metrics
	// BeforeRun, when set, runs once everything is built and before the
	// first claim, with the daemon's pool (the demo seeds its tasks there).
	BeforeRun func(ctx context.Context, db *pgxpool.Pool) error
}

// DefaultAPIMaxConns is the HTTP API's connection pool size by default.
const DefaultAPIMaxConns = 4
