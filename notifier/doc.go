// Package notifier turns outbox events into notifications that a person
// receives once: it is the outbox.Handler of agentd's dispatcher.
//
// Each (task generation, rule) has one message. The first event posts it —
// a reconcilable ledger effect, "notify.post" at step "notify/<rule>",
// whose post carries the effect's key in the message metadata, so that an
// unknown outcome is settled by reading the channel history, never by
// posting blindly. Later events update that message in place
// ("notify.update" at "notify/<rule>/<event id>", keyed: an update sets
// the whole content, so doing it again is harmless). When the sink can no
// longer update it, a new message is posted through the ledger
// ("notify.post" at "notify/<rule>/<event id>") and later events update
// that one.
//
// A notify tool call's event posts its message as its own effect
// ("notify.post" at the tool's step).
//
// Every effect is fenced on the dispatcher's claim of the event
// (ledger.Attempt.Event), so a dispatcher that lost its claim records
// nothing, and re-delivering an event performs nothing twice: a replayed
// task's new events update its message, a re-run (a new generation) posts
// a new one.
package notifier
