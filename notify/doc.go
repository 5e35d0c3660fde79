// Package notify delivers notifications (task state changes, agent messages)
// to people. A Sink posts a Message under the effect's key, updates it in
// place by the ref Post answered, and finds it again by key:
//
//	Post(ctx, key, m) (ref, error)
//	Update(ctx, ref, m) error
//	Find(ctx, key, m, since) (ref, found, error)
//
// so the ledger treats a notification as a reconcilable effect: when a
// post's outcome is unknown (the worker lost its lease before recording
// it), the next attempt looks the key up first (from about the time the
// effect was reserved) and posts only if the message is absent. No
// notification is ever sent twice. A dispatcher posts one message per
// (task, rule) and then updates it as the task moves on; when Update fails
// with ErrMessageGone, it posts a new message, as a new effect.
//
// A Message is a channel and a text, with an optional title, label/value
// fields and footer.
//
// Two sinks implement Sink. SlackSink (slack-go) carries the key in Slack
// message metadata, answers "<channel id>/<ts>" as the ref, renders the
// message as Block Kit (header, fields, sections, footer), updates with
// chat.update, finds a message by reading the channel history with
// metadata, paces posts and updates per channel and per workspace, waits
// out 429s and never shows its token. ConsoleSink is the sink used when no
// Slack token is configured: it prints a readable line and appends a JSON
// record per post and per update to a file; refs are "<file>:<line>", Find
// searches the post records and Update appends an edit record.
package notify
