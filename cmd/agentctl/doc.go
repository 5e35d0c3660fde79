// Command agentctl is the operator's command line for agentledger: submit,
// list, show and cancel tasks, and migrate the schema.
//
//	agentctl migrate up
//	agentctl submit --kind echo --payload '{"msg":"hi"}' --idempotency-key order-42
//	agentctl list --state queued,running
//	agentctl show 42
//	agentctl cancel 42
//
// It connects to --database-url (default $DATABASE_URL); with neither it
// starts or joins the embedded PostgreSQL cluster in --state-dir (default
// $AGENTLEDGER_STATE_DIR, else /var/lib/agentledger as root and
// ~/.local/state/agentledger otherwise), the one agentd uses, and stops it
// again on exit when agentctl was its only user. Every command but migrate
// refuses to run on a database whose schema is not migrated.
//
// Output is a table for people or, with --output json, JSON for programs.
// Errors go to stderr as "agentctl: <message>", sometimes followed by a hint.
//
// Exit codes:
//
//	0  success, including a submission that matched an existing task by its key
//	1  the operation failed: task not found, task already finished, key reused
//	   with a different request, database unreachable or not migrated
//	2  usage: unknown command or flag, invalid input (bad JSON payload, bad
//	   --run-at, unknown state), migrate down without --yes
package main
