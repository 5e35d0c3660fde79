package notify

import "context"

// Message is one notification.
type Message struct {
	// Channel names where the message goes ("ops" or "#ops"; a Slack
	// channel for the Slack sink).
	Channel string
	// Text is the message body.
	Text string
}

// Sink delivers messages, each under a key that identifies the intended
// effect (the ledger's downstream key for it).
type Sink interface {
	// Post delivers m under key and returns a reference to what it made
	// (a file line, a Slack channel and ts). Posting a key that was
	// already posted returns the first post's reference and delivers
	// nothing.
	Post(ctx context.Context, key string, m Message) (ref string, err error)
	// Find looks up the message m posted under key: found reports whether
	// an earlier Post landed, and ref is its reference. m says where to
	// look (a Slack sink reads m.Channel's history).
	Find(ctx context.Context, key string, m Message) (ref string, found bool, err error)
}
