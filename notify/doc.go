// Package notify delivers notifications (task state changes, agent messages)
// to people. A Sink posts a message under the effect's key and can find it
// again by that key, so the ledger treats a notification as a reconcilable
// effect: when a post's outcome is unknown (the worker lost its lease before
// recording it), the next attempt looks the key up first and posts only if
// the message is absent. No notification is ever sent twice.
//
// Two sinks implement it. SlackSink (slack-go) carries the key in Slack
// message metadata, answers "<channel id>/<ts>" as the ref, updates a
// message in place (Updater), finds a message by reading the channel history
// with metadata, paces posts per channel and per workspace, waits out 429s
// and never shows its token. ConsoleSink is the sink used when no Slack
// token is configured: it prints a readable line and appends a JSON record
// per message to a file, which is what its Find searches.
package notify
