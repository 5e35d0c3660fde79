// Package notify delivers notifications (task state changes, agent messages)
// to people. A Sink posts a message under the effect's key and can find it
// again by that key, so the ledger treats a notification as a reconcilable
// effect: when a post's outcome is unknown (the worker lost its lease before
// recording it), the next attempt looks the key up first and posts only if
// the message is absent. No notification is ever sent twice.
//
// This package holds the Sink abstraction and ConsoleSink, the sink used
// when no Slack token is configured: it prints a readable line and appends a
// JSON record per message to a file, which is what Find searches.
//
// The Slack sink comes in a later change and implements the same Sink: Post
// carries the key in the message metadata and answers the channel and ts as
// the ref; Find reads the channel history for the key.
package notify
