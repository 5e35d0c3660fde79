// Package demo is agentd's first five minutes (agentd --demo): a loopback
// "payments" API to call through the ledger (charges and their refunds,
// stock reservations and their releases, and a courier that refuses every
// shipment), and a small workload seeded idempotently — a charge with a
// child task and a notification, a call that fails twice and then
// succeeds, a call to a legacy endpoint without idempotency whose outcome
// is lost (so its task needs an operator), a saga whose shipment is
// refused after its charge and reservation completed (so it undoes both,
// newest first, and ends compensated), a cron schedule, and a notification
// rule for the console sink.
package demo
