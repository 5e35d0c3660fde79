package notify

import (
	"context"
	"errors"
	"time"
)

// Message is one notification. Channel and Text are all a sink needs; the
// optional Title, Fields and Footer give it structure where the sink has
// some (Slack Block Kit; the console shows title and fields on its line).
type Message struct {
	// Channel names where the message goes ("ops" or "#ops"; a Slack
	// channel name or ID for the Slack sink).
	Channel string
	// Text is the message body.
	Text string
	// Title heads the message, e.g. "Task 42 succeeded" (Slack: a header
	// block, cut at 150 characters).
	Title string
	// Fields are short label/value pairs under the title: task, kind,
	// state, attempt (Slack: two columns).
	Fields []Field
	// Footer is small print at the bottom (Slack: a context block; the
	// console does not show it).
	Footer string
}

// Field is one label/value pair of a Message.
type Field struct {
	Label string `json:"label"`
	Value string `json:"value"`
}

// ErrMessageGone: the sink cannot update the message (Slack: it was
// deleted or its edit window closed; console: no post has that ref). The
// caller posts a new message instead, as a new effect through the ledger.
// Errors from Update match it with errors.Is; they are also permanent.
var ErrMessageGone = errors.New("notify: the message can no longer be updated")

// Sink delivers messages, each under a key that identifies the intended
// effect (the ledger's downstream key for it), and edits them in place: a
// dispatcher posts one message per (task, rule) and updates it as the task
// moves on.
type Sink interface {
	// Post delivers m under key and returns a reference to what it made
	// (a file line, a Slack channel ID and ts). Posting a key already
	// posted returns the first ref and delivers nothing (best effort
	// within the process, the ledger guarantees across processes).
	Post(ctx context.Context, key string, m Message) (ref string, err error)
	// Update replaces the content of the message ref (as Post returned
	// it) with m. An error matching ErrMessageGone means it cannot be
	// updated and a new message should be posted.
	Update(ctx context.Context, ref string, m Message) error
	// Find looks up the message posted under key in m.Channel, reading
	// only what was posted since about since (zero: everything): found
	// reports whether an earlier Post landed, and ref is its reference.
	// Pass the time the effect was reserved.
	Find(ctx context.Context, key string, m Message, since time.Time) (ref string, found bool, err error)
}

// ShortKey is enough of an effect key to tell it in logs and on screen.
func ShortKey(key string) string {
	if len(key) > 16 {
		return key[:16] + "…"
	}
	return key
}
