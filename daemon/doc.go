// Package daemon is agentd as a library: one Config builds the worker pool,
// the HTTP API and webhooks, the cron scheduler, the notification
// dispatcher, the retention janitor, the metrics, the ledger and the tool
// registry, each once, over one PostgreSQL database (or the embedded
// cluster). A program registers its own task kinds and tools before Run;
// they run exactly like the built-in ones, and every effect a tool
// performs passes through the ledger under a deterministic key.
//
// # Embedding the daemon
//
// New takes a Config whose zero fields are agentd's defaults (cmd/agentd is
// this package behind flags, environment variables and a TOML file, and its
// -help documents each field). Config holds one group per part: Database,
// Worker, Model, HTTPTools, Notify, API, Maintenance, Policy and Hooks,
// each documented where its type is defined, and a zero group is that
// part's defaults. Run opens the database (migrating it unless
// Database.NoMigrate), builds every part, closes Ready, and works until its
// context ends; then it stops claiming, lets running tasks finish within
// Worker.Grace and releases the leases of the rest. A mistake in the
// configuration is a *ConfigError, returned before any of the
// configuration's grants, limits and tenant shares is stored. One that
// needs no database to be seen (a value out of range, a file that does
// not read, a name nothing can have) is returned before the database is
// opened, so no embedded cluster is created and no schema migrated for
// it, and whether or not this daemon runs the part it configures; the
// rest (a Slack token that Slack refuses) before the first claim.
//
//	d := daemon.New(daemon.Config{
//		Database: daemon.Database{URL: os.Getenv("DATABASE_URL")},
//		API:      daemon.API{Listen: "127.0.0.1:7450"},
//	})
//	if err := d.RegisterKind("refund", daemon.Kind(refund)); err != nil { … }
//	if err := d.RegisterTool(openTicket); err != nil { … }
//	err := d.Run(ctx)
//
// An empty API.Listen runs no HTTP server; Maintenance.NoCron,
// Maintenance.NoJanitor and Notify.NoDispatch leave those services to other
// daemons of the fleet. Handle adds routes of your own beside the API;
// Hooks.Metrics, Hooks.Observer and Hooks.ObserveEffect let a program read
// what the daemon does.
//
// # Kinds
//
// Kind turns a func(ctx, task, args T) (R, error) into a handler: the
// payload is decoded into T with unknown fields refused, then T's Validate
// (if it has one) runs. The daemon publishes the JSON Schema of T when it
// starts, so agentctl and the HTTP API of every daemon refuse a payload
// that does not fit (a 422 naming the field) before anything is queued; a
// payload that no longer decodes when the task runs fails it for good with
// the same message. R is the task's result. Errors follow the package
// agentledger vocabulary: Permanent ends the task, RetryAfter picks the
// next attempt's time, anything else is retried with backoff. An untyped
// worker.Handler may be registered too.
//
// A kind's handler may run more than once for one task (a lease lost to a
// crash, a replay): whatever it does outside the database must go through
// a tool, or otherwise be safe to repeat.
//
// # Tools and their effect classes
//
// tools.Define declares a tool from a Go argument type (its JSON Schema is
// generated, or given) and an effect class, which tells the ledger what to
// do when an attempt died and the outcome of a call is unknown:
//
//   - ledger.Pure reads only: performed again freely; the first result
//     recorded stands.
//   - ledger.Keyed sends ledger.Call.DownstreamKey to a target that
//     deduplicates on it: sent again under the same key.
//   - ledger.Reconcilable has a Find hook that looks the key up: found, its
//     result is recorded; not found, it is performed.
//   - ledger.Unsafe can neither: an unknown outcome parks the task as
//     needs_attention for an operator (agentctl resolve), never sent again
//     blindly.
//   - ledger.Local writes only to this database, inside the ledger row's
//     transaction: it commits with its record or not at all.
//
// A registered tool is callable from steps tasks ({"tool": name, "args":
// …}) and by agent tasks that list it, shows in replay --dry-run and the
// console like a built-in one, and a replay of a finished task serves its
// result from the ledger without performing it. RegisterTool refuses at
// once a name taken by a built-in tool or registered twice, a name steps
// and models cannot call ([a-zA-Z0-9_-]{1,64}, or server/tool for a tool
// of an MCP server connected by hand, outside the configured servers'
// namespaces), and parameters that are no object's JSON Schema.
//
// # MCP servers
//
// Config.MCPServers names MCP tool servers (a stdio command the daemon
// starts and restarts with backoff, or a streamable-HTTP URL with secret
// headers from a file). Their tools become tools named "server/tool"
// through package mcptools, each call a journaled effect whose class
// comes from the tool's annotations (read-only → pure, idempotent → keyed,
// anything else → unsafe), with the ledger key in the call's _meta
// (mcptools.KeyMeta). A server that is down makes only its own tools fail
// (as a transient error, tried again); MCPStates and /readyz report each
// server.
//
// A stdio server runs as the daemon's user, with only the environment its
// MCPServer gives it, but it reads whatever that user may: the daemon's
// /proc/<pid>/environ unless the program calls HideEnvironment (agentd
// does; Run does not, the choice being the program's for its whole
// process), and every file of the user, env files and headers files
// included. Run a server you do not trust under a user of its own or in a
// sandbox, through its Command.
//
// # Submitting from another program
//
// Package client submits tasks, typed or not, under a submission key that
// makes a retried submit one task: over the database (client.Database) or
// the HTTP API (client.HTTP).
package daemon
