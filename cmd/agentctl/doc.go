// Command agentctl is the operator's command line for agentledger: submit,
// list, show, cancel and retry tasks, replay, re-run and resolve them, look
// effects up in the ledger, list the worker pools, manage the
// notification rules, cron schedules and tenants, and migrate the schema.
//
//	agentctl migrate up|down|status
//	agentctl submit --kind echo --payload '{"msg":"hi"}' --idempotency-key order-42 [--queue Q] [--priority N] [--run-at TIME|+DURATION]
//	agentctl submit --file task.json|- [flags that override its fields]
//	agentctl list [--state queued,running] [--queue Q] [--kind K] [--tenant T] [--since T] [--until T] [--limit N] [--before ID]
//	agentctl show 42
//	agentctl cancel 42
//	agentctl cancel --all [--state S] [--queue Q] [--kind K] [--tenant T] [--since T] [--until T] [--yes]
//	agentctl retry 42
//	agentctl retry --all [--queue Q] [--kind K] [--tenant T] [--since T] [--until T] [--yes]
//	agentctl replay 42 [--dry-run]
//	agentctl rerun 42 --yes
//	agentctl resolve 42 --step tool/1 (--done | --retry) --note TEXT
//	agentctl ledger (--key K | --task ID | --operation OP) [--tenant T] [--limit N]
//	agentctl workers [--stale-after 1m]
//	agentctl rule add NAME --channel C [--tenant T] [--queue Q] [--kind K] [--events succeeded,dead] [--disabled] [--replace]
//	agentctl rule list
//	agentctl rule rm|enable|disable NAME
//	agentctl notifications redeliver (42 | --all [--yes]) [--dry-run]
//	agentctl schedule add NAME --spec SPEC --kind K [--timezone TZ] [--missed skip|run-once] [--payload JSON|@file|-]
//	agentctl schedule list
//	agentctl schedule pause|resume|rm NAME
//	agentctl tenant add NAME
//	agentctl tenant list
//	agentctl tenant token create TENANT [--name LABEL]
//	agentctl tenant token list [TENANT]
//	agentctl tenant token revoke ID|PREFIX
//	agentctl signal NAME KEY [--payload JSON|@file|-] [--idempotency-key K] [--tenant T] [--retention D]
//	agentctl signals [--state pending|consumed|expired] [--name N] [--tenant T]
//	agentctl waits [--task ID] [--kind signal|timer|children] [--state waiting,done,…] [--tenant T]
//	agentctl end-wait 7 --reason TEXT
//	agentctl completion bash|zsh|fish|powershell
//
// submit --file reads a task as a JSON object, {"kind", "payload", "queue",
// "tenant", "priority", "run_at", "max_attempts", "idempotency_key",
// "allow_unserved"}, from a file or standard input (-); flags given as well
// win. submit refuses (exit 2) a task no live worker serves, naming what is
// served, unless --allow-unserved, and a steps payload that would fail when
// it runs (package admit).
//
// --since and --until bound the creation time of the tasks list, cancel
// --all and retry --all select: an RFC 3339 time, a date (2026-01-02,
// midnight local time) or a duration meaning that long ago (30m, 2h, 7d).
//
// retry runs a dead task again in the same generation, its completed effects
// served from the ledger; a task whose ledger rows retention removed must be
// re-run instead. retry --all and cancel --all count the tasks their filter
// matches, ask for confirmation on the terminal (or take --yes; without a
// terminal and without --yes they refuse, exit 2), act, and report the
// tasks done and those skipped, with the reason.
//
// ledger looks effects up across tasks and generations: by key or key prefix
// (at least 6 characters), task or operation, narrowed by tenant.
//
// workers lists, per worker pool announced or holding leases, its queues and
// kinds, its running tasks, its last heartbeat, its next lease expiry and its
// expired leases; a worker with an expired lease or no heartbeat for longer
// than --stale-after is STALE, with when its registration is pruned.
//
// show prints a task's fields, attempts, the journal of its current
// generation (including the notify.post and notify.update effects of its
// messages) and its notification events with their delivery state.
//
// A notification rule posts one message per task and rule to its channel,
// at the first of the rule's events (task states) the task reaches, and
// updates it in place as the task changes state; agentd delivers them.
// notifications redeliver sends failed ones again once their cause (a
// token, a channel) is fixed, under the same ledger keys: still one message
// per task generation and rule; --dry-run lists what it would send.
//
// It connects to --database-url (default $DATABASE_URL); with neither it
// starts or joins the embedded PostgreSQL cluster in --state-dir (default
// $AGENTLEDGER_STATE_DIR, else /var/lib/agentledger as root and
// ~/.local/state/agentledger otherwise), the one agentd uses, and stops it
// again on exit when agentctl was its only user. A state directory with no
// cluster is refused, naming the ones that have one: agentd initialises a
// cluster on its first start, and of agentctl's commands only migrate up
// does. Every command but migrate refuses to run on a database whose
// schema is not migrated.
//
// Output is a table for people or, with --output json, JSON for programs.
// Errors go to stderr as "agentctl: <message>", sometimes followed by a hint.
//
// Exit codes:
//
//	0  success, including a submission that matched an existing task by its key
//	1  the operation failed: task or rule not found, task already finished,
//	   task not dead (retry) or its ledger expired, key reused with a
//	   different request, rule name taken (without --replace), a bulk action
//	   not confirmed, database unreachable or not migrated, no cluster in
//	   --state-dir
//	2  usage: unknown command or flag, invalid input (bad JSON payload or
//	   task file, bad --run-at, --since or --until, unknown state, bad rule
//	   name or event, missing --channel, ledger without a selector),
//	   migrate down, rerun or advance-ids without --yes, retry --all or cancel --all
//	   without --yes when standard input is not a terminal
package main
