// Package tui is agentctl's operator console: a Bubble Tea (v1) program
// over the task store.
//
// The console lists tasks (live, page by page with an id cursor, filtered by
// state, queue, kind and tenant — a form that lists the values each takes
// and refuses one no task can have, F clearing them all — searched and
// sorted over the loaded page), opens one task with its attempts, its
// journal of effects and its notifications, and performs the operator's
// actions — replay (after a preview of which effects the ledger serves and
// which run), re-run as a new intent, cancel, retry a dead task, resolve an
// effect of unknown outcome, deliver a task's failed notifications again
// (after a preview of what each sends), and bulk retry or cancel over the
// filter — each behind a confirmation. An approvals view lists the
// requests waiting for a decision and decides them; a waits view lists the
// tasks' waits for a signal, a timer or their children, sends a signal
// wait its signal and ends a wait. A workers view shows each worker's leases,
// queues, kinds and MCP servers; the title says when no worker is live. A
// limits view shows the fleet's limits with their circuit breakers' states
// and the targets booked lately.
//
// Layout:
//
//   - store.go, dbstore.go, dbstore_waits.go: the Store interface the
//     console talks to and DBStore, its adapter over the operator service
//     (and the ledger, for the journals of earlier generations, package
//     flow, for the limits, and packages approvals and waits).
//   - plan.go: the replay preview's rule, the one agentctl replay --dry-run
//     applies.
//   - app.go, app_update.go, app_view.go, app_actions.go: the root model. It
//     routes messages to one small model per component — tasks*.go (the
//     task table, its paging, search and sort), filter.go (the filter form),
//     task*.go and journal.go (the task view), dialog.go (confirmations),
//     workers.go, limits.go, approvals.go and approval_view.go, waits.go
//     and wait_view.go — and opens the dialogs of the operator's actions
//     (redelivery.go: the redelivery's; approval_actions.go, wait_actions.go
//     and payload_dialog.go: a decision's, a signal's and a wait's end).
//   - commands.go, messages.go: every store call runs inside a tea.Cmd that
//     returns a message; Update never does I/O.
//   - keys.go: the one keymap, shown by the help bar; styles.go: every
//     style; options.go: the options and the clock; format.go: text helpers.
//
// Options.Now is the clock behind every age the console prints, so tests
// render deterministic screens.
package tui
