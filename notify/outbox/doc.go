// Package outbox is the transactional outbox of task notifications and the
// dispatcher that delivers it.
//
// Events are written by the statements that change task states (package
// claims composes EventsCTE into them), in the same statement, one per
// matching enabled notification rule, and by the notify tool inside its
// ledger transaction: an event exists if and only if its cause committed.
// Each has a stable id.
//
// Dispatchers — any number, in any number of daemons — claim events with
// FOR UPDATE SKIP LOCKED under a lease and a fencing token from one
// sequence, hand them to a Handler, and mark them delivered, fenced on the
// token. The events of one (task, rule) are claimed one at a time and in
// order, so a message updated in place ends showing the newest state. A
// crash between delivery and marking re-delivers the event after its lease
// expires; the handler's ledger keys make that harmless (notify.Deliverer).
package outbox
