package slack

import (
	"context"
	"fmt"
	"strings"
	"time"

	slackgo "github.com/slack-go/slack"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/notify"
)

// Paging of the Web API reads.
const (
	// historyPage is conversations.history's largest page: a search
	// costs one call per page, and the method is rate limited (Tier 3,
	// about 50 calls a minute).
	historyPage = 999
	listPage    = 1000
	// findMargin widens Find's window before since, in Slack's clock, for
	// the database's clock (which stamps since) disagreeing with ours.
	// The dispatcher already needs those two within a sixth of a lease
	// (10s by default) of each other.
	findMargin = 30 * time.Second
)

// Find looks through the history of m.Channel (a name or an ID) for the
// message posted under key, and returns its ref. It reads the messages
// Slack stamped since about since, translated to Slack's own clock as its
// answers showed it (an auth.test reads it when no answer did lately),
// less findMargin; a zero since reads the whole history. If several carry
// the key, the oldest wins. Errors are Post's; a channel name needs the
// channels:read scope (groups:read for private channels) to be resolved.
func (s *Sink) Find(ctx context.Context, key string, m notify.Message, since time.Time) (string, bool, error) {
	if key == "" {
		return "", false, agentledger.Permanent(fmt.Errorf("notify: slack: empty key"))
	}
	id, err := s.channelID(ctx, m.Channel)
	if err != nil {
		return "", false, err
	}
	params := slackgo.GetConversationHistoryParameters{ChannelID: id, Limit: historyPage, IncludeAllMetadata: true}
	if !since.IsZero() {
		off, err := s.slackOffset(ctx)
		if err != nil {
			return "", false, err
		}
		params.Oldest = formatTS(since.Add(off - findMargin))
	}
	pages := 0
	ref := ""
	for {
		var page *slackgo.GetConversationHistoryResponse
		err := s.call(ctx, op{method: "conversations.history", channel: m.Channel, key: key}, func(ctx context.Context) error {
			var err error
			page, err = s.api.GetConversationHistoryContext(ctx, &params)
			return err
		})
		if err != nil {
			return "", false, err
		}
		pages++
		for _, msg := range page.Messages { // newest first: the last match is the oldest
			if msg.Metadata.EventType == metadataEventType && msg.Metadata.EventPayload["key"] == key {
				ref = id + "/" + msg.Timestamp
			}
		}
		if !page.HasMore || page.ResponseMetaData.NextCursor == "" {
			break
		}
		params.Cursor = page.ResponseMetaData.NextCursor
	}
	s.log.Debug("slack history searched", "channel", m.Channel, "key", notify.ShortKey(key), "found", ref != "",
		"oldest", params.Oldest, "pages", pages)
	return ref, ref != "", nil
}

// channelID resolves a channel name to its ID, from what the sink learnt
// or else from conversations.list; an ID is answered as is.
func (s *Sink) channelID(ctx context.Context, channel string) (string, error) {
	if channel == "" {
		return "", agentledger.Permanent(fmt.Errorf("notify: slack: no channel"))
	}
	if id, ok := s.knownID(channel); ok {
		return id, nil
	}
	name := strings.TrimPrefix(channel, "#")
	params := slackgo.GetConversationsParameters{Limit: listPage, Types: []string{"public_channel", "private_channel"}}
	for {
		var chans []slackgo.Channel
		var next string
		err := s.call(ctx, op{method: "conversations.list", channel: channel}, func(ctx context.Context) error {
			var err error
			chans, next, err = s.api.GetConversationsContext(ctx, &params)
			return err
		})
		if err != nil {
			return "", err
		}
		for _, c := range chans {
			s.remember(c.Name, c.ID)
		}
		if id, ok := s.knownID(name); ok {
			return id, nil
		}
		if next == "" {
			return "", agentledger.Permanent(&Error{Method: "conversations.list", Code: "channel_not_found", Channel: channel})
		}
		params.Cursor = next
	}
}
