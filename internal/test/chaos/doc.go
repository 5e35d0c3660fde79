// Package chaos is the proof under fire: three agentd processes on one
// PostgreSQL, a counting downstream that honours Idempotency-Key, a Slack
// test server, a fake model and a counting MCP server in every daemon, while
// the harness SIGKILLs and restarts
// daemons, freezes one past its lease (SIGSTOP, then SIGCONT: a zombie),
// restarts PostgreSQL, crashes it (immediate shutdown) and cuts connections.
// At the end every task must have
// finished with exactly one business effect per intended effect (an
// idempotent MCP call's under one key), one child per parent, one Slack
// message per (task, rule) and per notify call, and no overlapping leases.
// An agent's destructive MCP charge is never sent twice: its agent succeeded
// with the charge sent once, or — killed between sending and recording —
// waits in needs_attention with the charge of unknown outcome.
//
// TestSagaChaos runs 300 sagas (issue 17) under the same fault schedule: a
// keyed charge and reservation, each with its compensation, and a shipment
// the downstream refuses for one saga in three. Every saga ends succeeded
// or compensated, with one charge and one reservation each, and one refund
// and one release — newest first, naming its own saga's effects — for
// each refused saga only. CHAOS_SAGAS sizes it.
//
// TestSagaRefundKilledBeforeRecord is its deterministic drill: one daemon
// is SIGKILLed while the downstream holds back the answer to a refund it
// performed; a new daemon sends the refund again under the same key, and
// the downstream holds one refund, naming the saga's charge.
//
// Issue 36's drills are about durable waits.
// TestSignalKilledBetweenConsumeAndRecord SIGKILLs a daemon held (by a
// trigger on the ledger and an advisory lock the drill holds) after a
// signal was consumed and before the waiting step was recorded: a new
// daemon records the step once, with the signal's payload, and the next
// step's POST happens once. TestTimerDueWhileEveryDaemonIsDown lets a
// timer come due with both daemons dead; it fires once when one returns.
// TestParentWaitsForHundredChildrenAcrossKills runs a Go kind (fanout, in
// the ticket daemon) that starts 100 children and waits for them on
// three daemons, each SIGKILLed once: the parent resumes once with the
// 100 results, every child's ticket opened once.
// TestCancelParentCancelsWaitingChildren cancels a parent that waits:
// its waiting children and their waits are cancelled.
//
// TestSlackFleetPacing, without faults, runs three daemons posting to
// three Slack channels and measures at the fake Slack that the fleet's
// limit keeps every channel to one post or update a second.
//
// TestFailover runs the round on a pg_auto_failover formation the harness
// starts (pg_autoctl as the postgres user under root: a monitor, a primary
// and two standbys in the replication quorum on localhost, a commit
// waiting for one), the daemons reaching it by a
// multi-host URL with target_session_attrs=read-write. Mid-run a planned
// switchover (pg_autoctl perform switchover), then a SIGKILL of the
// primary node's process group — pg_autoctl, its keeper and the
// postmaster, so that no keeper restarts it in place and the monitor fails
// over. Every acknowledged submission exists and the drill's invariants
// hold; it logs the time from each failure to the standby's promotion and
// to the first claim on it. TestFailoverAsync (CHAOS_FAILOVER_ASYNC=1) runs
// the same round with asynchronous replication and reports what was lost
// instead of failing. FAILOVER_TASKS, FAILOVER_AGENTS and FAILOVER_SECONDS
// size them; without pg_autoctl they skip, visibly.
//
// The default run is short (CI). CHAOS_TASKS, CHAOS_AGENTS, CHAOS_SECONDS
// and CHAOS_SEED size it and make a failing run reproducible (the seed is
// printed); `CHAOS_TASKS=2000 CHAOS_SECONDS=60 go test ./internal/test/chaos -run
// Chaos -v -timeout 30m` is the full run. The second round runs the daemons
// through PgBouncer (CHAOS_PGBOUNCER names its binary; by default
// pgbouncer on PATH, else /usr/sbin/pgbouncer); where there is none it is
// skipped, and says so on the terminal even without -v. A third runs them
// with --pgbouncer-prepared through a PgBouncer that keeps prepared
// statements, 1.21 or later ($PGBOUNCER_PREPARED, else the installed one
// if that recent), and is skipped, visibly, without one. With CHAOS_KEEP set
// (to anything) a failed round keeps its directory (the daemons' logs; pg_autoctl's and
// the nodes' data for the failover rounds) and logs where it is.
package chaos
