// Package metrics holds agentd's Prometheus metrics: counters fed by the
// packages' observer hooks (worker, ledger, outbox, schedule, webhooks,
// HTTP API, janitor) and gauges read from the database at scrape time.
//
// The one figure to watch for the product's promise is
// agentledger_effects_total by outcome: "served" counts effects the ledger
// answered without performing them again — replays and re-polls that
// would otherwise have been a second charge, message or child task.
package metrics
