// Package agentledger holds the domain of agentledger: tasks, their states,
// attempts and the errors every other package speaks. It does no I/O and
// imports nothing that talks to PostgreSQL, so any package can depend on it.
//
// The layout of the module:
//
//	claims/      the claim protocol: enqueue, claim, heartbeat, finish (fenced)
//	worker/      the agentd worker pool: producers, heartbeats, graceful shutdown
//	migrations/  the embedded, numbered schema and its runner
//	pgembed/     a private PostgreSQL cluster started from installed binaries
//	database/    opening a pool: DATABASE_URL or the embedded cluster
//	canonjson/   canonical JSON and request hashes
//	tools/       built-in task kinds and tools
//	notify/      notifications (Slack and console sinks)
//	tui/         the operator console
//	cmd/agentd   the daemon; cmd/agentctl the operator CLI
package agentledger
