// Package agentledger holds the domain of agentledger: tasks, their states,
// attempts, leases, retry backoff and the errors every other package speaks.
// It does no I/O and imports nothing that talks to PostgreSQL, so any
// package can depend on it.
//
// The layout of the module (docs/design.md has the invariants and the
// protocols; dependencies point down this list, roughly):
//
//	cmd/agentd         the daemon; cmd/agentctl the operator CLI and console
//	daemon/            agentd as a library: Config, registered kinds and tools, Run
//	client/            submitting tasks from another program, over the database or the API
//	metrics/           Prometheus collectors
//	steps/, agent/     the steps kind (tool calls in order) and the LLM agent kind
//	httpapi/           the HTTP API with Idempotency-Key; tenants/ its tenants and tokens
//	webhooks/          signed webhook sources and their inbox
//	schedule/          durable cron schedules and the scheduler
//	janitor/           retention sweeps, one janitor at a time
//	worker/            the worker pool: producers, LISTEN, the lease keeper, the completer
//	tui/               the operator console (bubbletea)
//	operator/          what an operator does to tasks, for agentctl, the console and the API
//	problem/           problem+json answers from the error vocabulary (codes.go)
//	notify/            notifications: messages, sinks, the deliverer, the notify tool
//	notify/outbox/     notification rules, the transactional outbox and its dispatcher
//	notify/slack/      the Slack sink; notify/console/ the console/file sink
//	tools/             the tool interface and registry, the built-in tools and kinds
//	mcptools/          an MCP server's tools as tools, each call through the ledger
//	ledger/            the dedupe ledger: keys, effect classes, Do, journal, resolution
//	claims/            the claim protocol: enqueue, claim, heartbeat, finish (fenced)
//	canonjson/         canonical JSON and request hashes
//	argschema/         JSON Schemas of tool arguments and kind payloads, from Go types
//	migrations/        the embedded, numbered schema and its runner
//	database/          opening a pool: DATABASE_URL or the embedded cluster
//	pgembed/           a private PostgreSQL cluster started from installed binaries
//	internal/          planner settings (pgplan), plan checks, test databases, logs and
//	                   servers, drills and the chaos suite
//
// examples/embed is a program embedding the daemon, examples/mcp an agent
// task calling an MCP server's tools, examples/intercept interceptors of
// an embedder's own on the effect path. cmd/agentbench, the
// benchmark against River, is a module of its own so that the reference
// queue is no dependency of the product.
package agentledger
