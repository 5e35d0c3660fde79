// Package operator is what an operator can do to tasks — show one with its
// attempts, journal and notifications; preview a replay; replay, re-run,
// cancel or retry it; settle an effect of unknown outcome; act on every
// task of a filter; preview and deliver again failed notifications; list,
// read and decide approval requests —
// written once for every front end: agentctl, the console (package tui)
// and the HTTP API call it.
//
// It owns no table: it composes the packages that do (claims for tasks,
// ledger for effects, notify/outbox for notifications, approvals for
// approval requests). A tenant of ""
// acts across tenants (the operator's own tools); any other tenant sees
// only its tasks, and another tenant's task is not found.
package operator
