// Command agentbench measures the claim protocol (packages claims and
// worker) and the ledger on a real PostgreSQL: how fast a backlog of no-op
// tasks burns down, in one process or several; how long a task waits
// between Enqueue and the start of its handler; the same two figures for
// River, a mature Go queue, on the same server; what keyed effects cost and
// what a replay saves; how history (finished tasks, ledger rows) slows the
// hot path; and whether throughput and latency hold over minutes of steady
// load with the janitor and cron running.
//
// Usage:
//
//	agentbench throughput [flags]     burn-down throughput sweep (pools, or --processes)
//	agentbench latency [flags]        enqueue→start latency at a steady rate
//	agentbench river [flags]          the burn-down with River
//	agentbench river-latency [flags]  the latency measurement with River
//	agentbench river-effects [flags]  effects' workload with River and a hand-written idempotency table
//	agentbench effects [flags]        steps tasks with keyed HTTP effects; --replay
//	agentbench signals [flags]        signal → resume: Send returning → the woken task's next step's effect
//	agentbench timers [flags]         timer lateness: a durable timer's resumption less its due time
//	agentbench growth [flags]         --finished N tasks, --ledger-rows N effects of history
//	agentbench sustained [flags]      minutes at a steady rate, with the janitor and cron; per window
//	agentbench fairshare [flags]      fair share between tenants: claim cost at N tenants, a new tenant's wait, starvation
//	agentbench fleet [flags]          N agentd processes on one database, directly and through PgBouncer, against one
//	agentbench help [command]         the usage, or a command's flags
//
// # Database
//
// With no --database-url (and no DATABASE_URL) the benchmark starts or joins
// the embedded cluster of database.Open in --state-dir (default
// /tmp/agentbench-state; fsync on, the production default). Every run gets
// a fresh database: --reset=template (the default) migrates a template
// database once and creates each run's database from it with CREATE
// DATABASE … TEMPLATE, dropping it afterwards; this needs the CREATEDB
// privilege. --reset=truncate instead migrates the target database itself
// and empties tasks, task_attempts, ledger, approvals, waits, waits_replaced and signals
// (TRUNCATE, then VACUUM ANALYZE) before every run, and River's river_job for the river commands:
// it destroys the tasks in that database, so it is never chosen
// automatically.
//
// # throughput
//
// Each run inserts --tasks no-op tasks (default 50000) with
// claims.Store.EnqueueBatch in batches of --insert-batch, runs VACUUM ANALYZE
// and CHECKPOINT, then starts --pools embedded daemons (daemon.New, each on
// its own connection pool of --max-conns, as separate agentd processes would
// be, with no HTTP server, cron, janitor or dispatcher: a queue-only
// reference runs none) serving the built-in noop kind. The daemons connect
// before the clock starts, which runs from when they may claim to when the
// daemons' observer has seen --tasks outcomes written, as River's own
// benchmark stops at its last completion event. A check that no task is
// left that is not succeeded confirms it after the clock has stopped: timed,
// its count over the run's table (tens of milliseconds at 50,000 tasks)
// weighed on the faster side. Should the check find tasks left (an attempt
// that failed counts as an outcome), the run ends at the send of the first
// check, every 20 ms, that finds none; a check every 5 s is the safety net.
// The sweep is the cross product of --pools, --concurrency and
// --batch (a batch larger than the concurrency is skipped: the pool clamps
// it); --repeat repeats it. Columns: claims and completes are the claim and
// succeed statements that changed rows (counted afterwards from
// attempt_records: all tasks of one statement share its now()), with the
// average tasks per statement.
//
// --waiting N inserts, before the run's tasks, N waiting tasks: the
// burn-down must not slow beside them. --waiting-kind says what they wait
// for: approval (the default), a person's approval as the approval gate
// leaves them (waiting, their deadline when their request expires in a
// day, each with its pending request in approvals); signal, timer or
// mixed (alternating), a wait_for_signal step (signal bench.idle, key
// idle-i, never sent) or a wait_timer step due in a day, as the wait tools
// leave them: waiting, their wait in table waits with its deadline in a
// day as their run_at, the wait reason waits.Describe gives, and their
// one attempt recorded as deferred.
//
// --processes 1,2,4 runs each pool in a worker process of its own instead
// (replacing the --pools sweep unless --pools is given too; its rows read
// "1proc", "2proc", …): the benchmark re-executes itself as "agentbench
// worker", one embedded daemon per process, as agentd runs but without its
// HTTP server, scheduler, janitor and dispatcher (idle in a burn-down
// anyway). The processes connect and report ready before the clock starts,
// report their finished counts on a pipe, and
// get the database URL in their environment. Their CPU time counts in the
// go columns; --cpuprofile profiles this process only.
//
// # Resource columns
//
// go cores, pg cores and others are the cores used on average during the
// measured phase by this process and its worker processes, by the
// PostgreSQL server (its processes read from /proc, so only for a server on
// this machine; "?" otherwise) and by everything else on the machine — a
// busy "others" means the figures of that run were disturbed. Only CPU time
// spent during the phase counts: a server process alive throughout counts
// its growth, one that started during it (a new pid, or a reused one with
// another start time) all of its time, and those that exited during it the
// growth of the postmaster's reaped children's time less what they had
// used when the phase started. go us/task
// and pg us/task are the CPU time per task of the workers and of the
// server: the efficiency figures, steadier than tasks/s when the machine is
// shared. rss MB is the peak resident set (VmHWM) of the process that ran
// the workers during the burn-down — this one (its peak reset through
// /proc/self/clear_refs after a GC when the phase starts, so it includes
// the benchmark's own memory) or the largest worker process. conns is the
// most connections of the workers (application_name agentbench-worker) seen
// in pg_stat_activity, sampled every 50ms.
//
// # latency
//
// One idle embedded daemon (LISTEN/NOTIFY on unless --poll-only, poll interval
// --poll-interval, default the worker's 1s) runs while --enqueuers
// goroutines, on a separate connection pool, enqueue single tasks on an
// open-loop schedule of --rate tasks/s for --duration. Each payload carries
// the monotonic time taken just before Enqueue; the handler notes when it
// starts. Percentiles of enqueue→start exclude the first --warmup; the
// Enqueue call itself (insert + commit) is reported alongside.
//
// # river and river-latency
//
// The same two measurements with River (github.com/riverqueue/river, with
// its pgx v5 driver) on the same server: each run gets a fresh database in
// the same way, with River's migrations applied by rivermigrate. river
// inserts --tasks jobs of a no-op worker with InsertMany in batches of
// --insert-batch, runs VACUUM ANALYZE river_job and CHECKPOINT, starts a
// client with --max-workers (swept) on a pool of --max-conns connections,
// and stops the clock when the client's completion events (a subscription,
// as River's own benchmark counts) reach --tasks, once river_job has no job
// left that is not completed (checked as throughput checks tasks). --fetch-cooldown and
// --fetch-poll-interval default to River's own benchmark settings (2ms,
// 20ms). river-latency inserts single jobs with Client.Insert through an
// insert-only client on a pool of its own, on the latency command's
// schedule, to an idle client with --max-workers; one run per
// --fetch-cooldown (default 100ms, the client's default, then 2ms): River
// sends at most one insert notification per queue and cooldown, and fetches
// at most once per cooldown.
//
// # river-effects
//
// The effects command's workload as a careful River user would build it
// without a ledger: --tasks jobs of --effects keyed POSTs each to the same
// loopback counting server, each call reserved in a hand-written table
// (idem: key, state, status, body) in a transaction of its own before it
// is sent, with Idempotency-Key derived from the job's order and step, and
// recorded after; the job is completed by River's batched completer once
// the worker returns (--complete batched) or in the last record's
// transaction with JobCompleteTx (--complete tx); the clock stops at the
// completer's events for the first, at the workers' returns for the
// second (each when the end is written). --max-workers and
// --max-conns default to the effects command's concurrency and pool size.
// The run fails unless the downstream performed one business effect per
// call. On a crash between a call and its record both sides send it again
// under the same key: only the downstream's deduplication keeps it to one
// effect, as for the ledger's keyed class.
//
// # effects
//
// Steps tasks (the embedded daemon's steps kind, tool registry and ledger,
// with the charge tool of tools.Define registered for --tool custom) whose steps are
// --effects keyed http_request POSTs to a counting server on the loopback
// interface in this process, which honours Idempotency-Key
// (agentledgertest/downstream). One pool of --concurrency, --batch and --max-conns
// (agentd's defaults) burns --tasks down. http_request keeps 100 idle
// connections per host, the charge tool's client one per running task
// (http.DefaultTransport keeps two per host: the rest would be new
// connections). Columns: hits are the requests the
// server received, performed and served the ledger.Do outcomes; xacts/task
// are the transactions committed in the run's database
// (pg_stat_database.xact_commit, read-only ones included, the benchmark's
// own queries taken out; read after the workers disconnected, so their
// statistics are flushed) and writes/task the transactions that wrote
// (transaction ids assigned, server-wide); writes/effect leaves out the
// claim and complete statements counted from the attempts. The run fails
// unless the server performed exactly one business effect per key.
//
// --limit-rate puts a fleet-wide limit (package flow) on the server's
// origin, which every http_request call books through the daemon's
// flow.Limiter; a rate far above the throughput (1000000/s, the default
// burst 1000) never makes a call wait, so what it costs is the check
// itself. bookings are the rows the phase wrote to flow_state, one per
// booking the database let through (a booking may take a batch of calls).
// With --tool custom the charge tool takes the limit's rate itself,
// through a flow.Limiter of its own on a pool like the daemon's (Take until
// it lets the call through: the rate part of the gate http_request passes,
// Limiter.Admit), and take p50 and p99 are the durations of those checks,
// one per performed effect.
//
// --replay then requeues every task as a replay (operator.Service.Replay,
// from 8 goroutines, untimed) and burns them down again: the
// row's effects/s are ledger hits/s, and the run fails unless every effect
// was served and the server received no request.
//
// # approvals
//
// Queues --requests steps tasks, each one keyed POST gated on approval
// ("approve": true), in a fresh database with one embedded daemon; waits
// until every task asked; then approves the requests one by one at --rate
// a second with approvals.Store.Decide, as agentctl approve does, and
// measures each one's time from the decision's commit to its POST reaching
// a loopback downstream: the decision wakes the task (due now, its queue
// notified), the daemon claims it, the gate finds the decision and the
// ledger performs the call. The command fails unless every approved
// request made its one effect.
//
// # signals
//
// Inserts --waiting tasks parked at a wait_for_signal step for signal
// bench.resume with keys never sent (as the fixture of throughput
// --waiting-kind signal; see throughput), then queues --signals steps
// tasks of two steps — wait_for_signal bench.resume with key order-i, then
// a keyed POST to a loopback downstream — to one embedded daemon, and
// waits until each has parked (state waiting). It then sends their signals
// one by one at --rate a second with waits.Store.Send, as the API does,
// and measures each one's time from Send returning to the POST reaching
// the downstream: Send's statement hands the signal to the wait and makes
// its task due (its queue notified), the daemon claims it, the wait's step
// finds its signal, and the ledger performs the call. send p50/p99 are the
// Send calls themselves. The command fails unless each signal woke its
// task and each task made its one effect.
//
// The daemon's pool is --max-conns, by default twice its concurrency and
// 8: a wait call holds its ledger reservation's connection while it takes
// another for the wait, and a smaller pool starves when every slot waits
// at once.
//
// # timers
//
// Queues --rate × --duration steps tasks, each one wait_timer step until
// a time — timer i due --lead after the start plus i/--rate seconds — to
// one embedded daemon, and fails unless every task has parked before the
// first is due. From the first due time on it waits until every task
// succeeded, then reads each timer's wait: lateness is its result's
// fired_at (taken by the daemon when the resumed step finds its timer due:
// the task has resumed) less its deadline; done is the task's finished_at
// less the deadline. fired/s is the rate the timers resumed at, from the
// first due time to the last resumption: below due/s the daemon fell
// behind, and lateness is then its backlog. The CPU columns are per timer,
// from the first due time to the last task's end.
//
// # Tracing
//
// throughput and effects take --tracing off (the default), on or both. On,
// the run is traced as agentd is with OTEL_EXPORTER_OTLP_ENDPOINT set
// (tracing.Setup, every span sampled, the SDK's default batching unless
// OTEL_BSP_ variables say otherwise), exporting over OTLP/HTTP to a sink in
// this process that only keeps the bodies: their spans are counted after the
// clock stops and reported on stderr. both runs each configuration without
// tracing and then with it, interleaved through --repeat, and the tracing
// column tells the rows apart. throughput's insert is untraced (its attempts
// are root spans); effects traces its insert too. Not with --processes.
//
// # growth
//
// --finished N (one run per value; k and M suffixes): N succeeded no-op
// tasks and their attempt records are pre-inserted into the real, logged
// tables, one INSERT … SELECT over generate_series per million rows
// (progress on standard error), then VACUUM ANALYZE and CHECKPOINT. Then
// --tasks queued tasks are claimed serially on one connection by Claim calls
// of Limit --claim-batch, each followed by an untimed SucceedMany: the
// claim latency percentiles (the first call, which prepares the statement,
// left out; each call includes its commit). Then --burn-tasks more
// (default 100,000: at ~20k a second, a shorter burn-down is as much one
// stall of a shared machine as a measure) are burnt down by one pool of
// --concurrency and --batch, as throughput does.
//
// --ledger-rows N: one task is claimed for the whole run; --effects
// completed keyed effects of it and N of other tasks (three steps each,
// tasks that are not in the tasks table) are pre-inserted into the ledger
// the same way, the task's first, with keys derived as ledger.EffectKey
// derives them. Then ledger.Do is timed serving each of the task's effects
// in random order (hit: a replay's look-up, nothing performed), performing
// as many new ones (fresh: look-up, a no-op perform, the fenced insert),
// and ledger.Find by a full key is timed --find-samples times (find: the
// operator's look-up, which filters on a key prefix).
//
// # sustained
//
// One embedded daemon (agentd's defaults: --concurrency 100, --batch 100,
// --max-conns 20) with its cron scheduler and retention janitor (its five
// sweeps, every window --retention) running, as agentd runs them, works while --enqueuers
// goroutines (default 8), on a separate connection pool, enqueue single
// no-op tasks on latency's open-loop schedule of --rate tasks/s (default
// 2000) for --duration (default 10m). One schedule, --cron (default "@every
// 1s"), enqueues a no-op task per slot. The run lasts --duration: the
// producers stop a second after it, and if they fell behind the schedule
// the tasks still due then are never sent (the total line says how many).
// Every sweep keeps --retention
// (default 1m) and the janitor runs every --janitor-interval (default 30s,
// the first run after a tenth of it), so it deletes finished tasks during
// the run. --run-timeout defaults to --duration plus 2 minutes.
//
// The run is cut into windows of --window (default 30s), and a row is
// printed as each ends. A task counts in the window its handler started in;
// the last window runs on until every enqueued task started (or none did
// for 5s).
// Columns: the window's start (seconds since the enqueuing began) and
// length, tasks enqueued per second, tasks started and started per second,
// the p50, p99 and maximum enqueue→start latency of those, the backlog
// (Enqueue called, not yet started) at its end, cron tasks fired, finished
// tasks the janitor deleted, and the resource columns (go is this process:
// enqueuers, workers, janitor and scheduler), per task started. Then a
// summary: the first and last window's throughput, p50 and p99, the least
// and most of each across the windows, and the whole run's. --csv PATH
// writes the rows as CSV, each as its window ends; --chart PATH draws
// throughput (with the offered rate) and p50/p99 over time, one point per
// window, with gonum.org/v1/plot: PNG or SVG by the file's extension.
//
// # fairshare
//
// Cost: for each --tenants count (default 1,10,1000), --tasks no-op tasks
// (default 20000) spread evenly over that many tenants (one INSERT …
// SELECT; the one tenant is "default", as throughput's tasks are) are
// claimed serially on one connection by due-only Claim calls of Limit
// --claim-batch (default 100) sharing one ClaimHint, as a worker's loop
// claims between polls, each followed by an untimed SucceedMany. Then as
// many are burnt down by one pool of --concurrency and --batch, as
// throughput does. --shares N gives min(N, tenants) of them, evenly
// spread, a tenant_shares row: alternately weight 3 (no cap) and weight 2
// with max_running 5. --running N puts N more tasks, spread over the same
// tenants in queue "held", in state running under leases of an hour for
// the timed claims: they count towards their tenants' caps, as a busy
// fleet's tasks in flight would. Each row says its claim p50 and burn-down against
// the one-tenant row of the same repeat; from --repeat 2 on, a table of
// medians (min–max) per tenant count follows.
//
// Fairness: for each --fair-tenants count N (default 2,10000), N−1 tenants
// (a0000, …) hold a backlog (--backlog, default 600000, spread over them,
// or --per-tenant each) of tasks holding their slot for --hold, worked by
// one daemon of --latency-concurrency and --latency-batch (agentd's 100
// and 100), while a brand-new tenant b enqueues --samples single tasks at
// --rate: b's enqueue → start (a task not started by the end counts as the
// longest, "unstarted"), and for b's first task the claims and tasks
// leased before it. Over a --window (default 60 s), each backlog tenant's
// starts and its longest gap between two (the window's ends count while
// it had due work), read from attempted_at afterwards on the server's
// clock; "starved" counts tenants with due work and no start, and the run
// fails if a backlog tenant drains. The mode column says whether the
// claims weighed every tenant or took turns (crowdAt = max(⌈batch/4⌉,
// 64)); --fair-csv writes each backlog tenant's row.
//
// # fleet
//
// Each run inserts --tasks no-op tasks into a fresh database and holds
// claims back with LOCK TABLE tasks IN EXCLUSIVE MODE while real agentd
// processes (built from this source, or --agentd) start one by one, each
// with --concurrency/N, its own application_name and DATABASE_URL in its
// environment. The clock runs from the lock's release to the last
// attempt's end, on the server's clock. The cases are 1 daemon, --daemons
// N, and N through a PgBouncer (transaction mode, --pool-size) that the
// command starts, in --rounds rounds, the order rotated each round. It
// samples pg_stat_activity every 50 ms (wait events, lock waits with their
// blocker, connections per daemon; through PgBouncer it counts clients
// with SHOW CLIENTS), reads deadlocks and rollbacks, counts the daemons'
// logged conflicts, and fails unless every task succeeded exactly once.
//
// # Profiling
//
// --cpuprofile=PREFIX writes a pprof CPU profile of this process per
// measured phase (PREFIX-<run>.pprof: the burn-down of a throughput run,
// the steady phase of a latency run, the whole of a sustained run), and
// beside it the process's allocation profile at the phase's start and end
// (PREFIX-<run>.allocs0.pprof and .allocs.pprof; go tool pprof
// -diff_base=...allocs0.pprof ...allocs.pprof shows the phase's own
// allocations). --pg-stats reports, per run, the
// server's CPU time by kind of process, the top statements of
// pg_stat_statements (calls, time, rows, buffers and WAL per call) and the
// average number of active backends per wait event (sampled every 10ms);
// on the embedded cluster it adds pg_stat_statements to
// shared_preload_libraries (ALTER SYSTEM) and restarts the cluster if it must,
// so use a separate --state-dir for profiling runs. Client backends are
// told apart by application_name (the workers' agentbench-worker, the
// enqueuers'), and a backend whose last query was LISTEN is the listener;
// the report lists the pids of each kind, for perf record --pid. It adds
// what changed in the server's counters, per task: commits of the run's
// database, WAL records, full-page images, bytes, writes and syncs, and
// checkpoints (server-wide), and per table inserts, updates with the share
// that was HOT, deletes and autovacuum and autoanalyze runs; before the
// last reading it closes the idle connections of its pool and waits 2.1s,
// since a backend publishes its statistics at most once a second.
// river-latency takes --pg-stats too; river takes --cpuprofile only.
//
// Every run stops itself: --run-timeout bounds each one.
package main
