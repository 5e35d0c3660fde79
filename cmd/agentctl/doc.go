// Command agentctl is the operator's command line for agentledger: submit,
// list, show and cancel tasks, replay, re-run and resolve them, manage the
// notification rules, and migrate the schema.
//
//	agentctl migrate up|down|status
//	agentctl submit --kind echo --payload '{"msg":"hi"}' --idempotency-key order-42
//	agentctl list --state queued,running
//	agentctl show 42
//	agentctl cancel 42
//	agentctl replay 42 [--dry-run]
//	agentctl rerun 42 --yes
//	agentctl resolve 42 --step tool/1 (--done | --retry) --note TEXT
//	agentctl rule add NAME --channel C [--tenant T] [--queue Q] [--kind K] [--events succeeded,dead] [--disabled] [--replace]
//	agentctl rule list
//	agentctl rule rm|enable|disable NAME
//
// show prints a task's fields, attempts, the journal of its current
// generation (including the notify.post and notify.update effects of its
// messages) and its notification events with their delivery state.
//
// A notification rule posts one message per task and rule to its channel,
// at the first of the rule's events (task states) the task reaches, and
// updates it in place as the task changes state; agentd delivers them.
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
//	1  the operation failed: task or rule not found, task already finished,
//	   key reused with a different request, rule name taken (without
//	   --replace), database unreachable or not migrated
//	2  usage: unknown command or flag, invalid input (bad JSON payload, bad
//	   --run-at, unknown state, bad rule name or event, missing --channel),
//	   migrate down without --yes
package main
