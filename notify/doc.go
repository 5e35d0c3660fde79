// Package notify is how agentledger tells people what their tasks did,
// each message received once and then updated in place.
//
// The vocabulary: a Message (a channel and a text, with an optional title,
// label/value fields and footer) goes to a Sink, which posts it under the
// effect's key, updates it in place by the ref Post answered, and finds it
// again by key:
//
//	Post(ctx, key, m) (ref, error)
//	Update(ctx, ref, m) error
//	Find(ctx, key, m, since) (ref, found, error)
//
// so the ledger treats a post as a reconcilable effect: when its outcome
// is unknown (the poster lost its claim before recording it), the next
// attempt looks the key up first (from about the time the effect was
// reserved, in the sink's own clock) and posts only if the message is
// absent.
//
// The pieces, from a task's state change to a person's screen:
//
//   - notify/outbox: the statements that change task states write, in the
//     same statement, one event per matching enabled rule (and the notify
//     tool writes one inside its ledger transaction), so an event exists
//     if and only if its cause committed. Dispatchers claim events under a
//     lease and a fencing token and hand them to a Handler.
//   - Deliverer, this package's outbox.Handler: each (task generation,
//     rule) has one message. The first event posts it — "notify.post" at
//     step "notify/<rule>", a reconcilable effect whose post carries the
//     effect's key in the message metadata. Later events update it in
//     place ("notify.update" at "notify/<rule>/<event id>", keyed: an
//     update sets the whole content, so doing it again is harmless). When
//     the sink can no longer update it (ErrMessageGone), a new message is
//     posted as a new effect ("notify.post" at "notify/<rule>/<event id>")
//     and later events update that one. A notify tool call's event posts
//     its message as its own effect at the tool's step. Every effect is
//     fenced on the dispatcher's claim of the event (outbox.ClaimFence),
//     so a dispatcher that lost its claim records nothing, and delivering
//     an event again performs nothing twice: a replayed task's new events
//     update its message, a re-run (a new generation) posts a new one.
//   - Redelivery (redeliver.go): a notification given up for good (a
//     wrong token) is sent again once the cause is fixed, under the same
//     keys: the operator requeues its event and Reopen puts its failed
//     effects back to pending, so a post is looked up before it is made
//     again. PlanOf says what it will send.
//   - Tool, the notify tool that tasks call: it writes its message to the
//     outbox as a local effect, so a task never waits on Slack.
//   - notify/slack and notify/console: the two sinks. Slack when a bot
//     token is configured; the console sink (a readable line and a JSON
//     record per post and update, in a file) otherwise.
package notify
