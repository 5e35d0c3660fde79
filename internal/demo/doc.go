// Package demo is agentd's first five minutes (agentd --demo): a loopback
// "payments" API to call through the ledger, and a small workload seeded
// idempotently — a charge with a child task and a notification, a call that
// fails twice and then succeeds, a call to a legacy endpoint without
// idempotency whose outcome is lost (so its task needs an operator), a cron
// schedule, and a notification rule for the console sink.
package demo
