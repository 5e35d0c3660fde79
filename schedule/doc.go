// Package schedule is durable cron: schedules stored in the database, and
// the Scheduler every agentd runs to turn their slots into tasks. It owns
// the schedules table and all its SQL (queries.go).
//
// # Schedules
//
// A schedule names a cron spec, read in its time zone (an IANA name, UTC
// by default), and the task each slot enqueues: tenant, queue, kind,
// payload, priority and max attempts. Specs have five fields (minute hour
// day-of-month month day-of-week), or six with seconds first, or are
// descriptors: @hourly, @daily, @weekly, @monthly, @yearly, @every 90s
// (github.com/robfig/cron/v3). A slot is an instant at which the spec
// fires; across daylight-saving changes a local time that does not exist
// that day has no slot, and one that occurs twice has two (robfig/cron's
// rule; they are distinct instants, with distinct keys). The slots of a calendar
// spec are the same whatever they are counted from; those of an @every
// spec are the schedule's first slot (the first after it was added or
// resumed) plus whole intervals.
//
// Each row keeps next_fire_at, the earliest slot not yet handled. Adding
// or resuming a schedule sets it to the first slot after now; pausing
// clears it, so the slots that pass while a schedule is paused are never
// fired, whatever its missed policy.
//
// # One task per slot, across daemons
//
// Any number of schedulers run at once, in any number of daemons. A
// scheduler fires a schedule in one transaction: it locks the row with
// SELECT … FOR UPDATE SKIP LOCKED, only if it is enabled and
// next_fire_at <= now; computes the due slots from next_fire_at through
// now; enqueues their tasks (package claims) in the same transaction; sets
// last_fire_at and moves next_fire_at to the first slot after now; and
// commits. "Now" is the database's clock (or the pinned Config.Now), never
// a host's, so daemons on skewed hosts agree on which slots are due.
//
// Two guards make each slot exactly one task:
//
//   - The row lock. A daemon that finds the row locked skips it; one that
//     reaches it after the holder committed re-reads the new version under
//     READ COMMITTED and finds it no longer due. Either way, a slot is
//     handled by one transaction, and a transaction that rolls back
//     enqueues nothing and moves nothing, so the slot is handled again.
//   - The submission key. Each slot's task has the submission key
//     cron:<schedule>:<slot in RFC 3339, UTC>, unique per tenant in the
//     tasks table (INSERT … ON CONFLICT DO NOTHING). Should two
//     transactions ever handle the same slot — a row edited back by hand,
//     a clock set back under a pinned test clock — the second finds the
//     first's task and reports it as a duplicate (Stats.Duplicates)
//     instead of enqueueing another. The key, not the lock, is the
//     guarantee (invariant I6).
//
// # Missed slots
//
// When a scheduler handles a schedule at time now, the due slots are those
// from next_fire_at through now. Usually there is one, a few milliseconds
// old. After downtime — no daemon running, the database unreachable, a
// long stall — there may be many. They are treated so:
//
//   - The latest due slot is on time if now - slot <= Config.Tolerance
//     (default one minute): it is fired, with its own key.
//   - Every earlier due slot is missed, and so is the latest one if it is
//     later than Tolerance.
//   - Policy "skip" (the default) fires no missed slot.
//   - Policy "run-once" fires one catch-up task, for the most recent
//     missed slot (with that slot's key), however many were missed.
//
// So a handling enqueues at most two tasks: the latest slot on time, and
// under run-once one catch-up for the slot before it (or, when even the
// latest slot is late, one catch-up for the latest). Missed slots that get
// no task are counted in Stats.Skipped and logged; the schedule then waits
// for the first slot after now. For example, "0 * * * *" with next_fire_at
// 04:00, handled at 09:30: slots 04:00 to 09:00 are due, 09:00 is 30
// minutes late, so all six are missed — skip enqueues nothing, run-once
// enqueues the 09:00 task — and next_fire_at becomes 10:00. Handled at
// 09:00:20 instead, 09:00 is on time and fires; run-once also enqueues the
// 08:00 task.
//
// # The loop
//
// Scheduler.Run wakes at the earliest next_fire_at of all enabled
// schedules (one indexed query), or after Config.PollInterval (default 1s)
// at most, to see schedules added, resumed or removed meanwhile. Every
// task it creates is logged with slog and reported to Config.OnFire;
// Stats counts fires, catch-ups, skipped slots and duplicates.
package schedule
