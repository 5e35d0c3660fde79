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
	historyPage = 200
	listPage    = 1000
	// findSkew widens Find's window for clocks that disagree.
	findSkew = 2 * time.Minute
)

// Find looks through the history of m.Channel (a name or an ID) for the
// message posted under key, and returns its ref. It reads the messages
// posted since about since (two minutes earlier, for clock skew); a zero
// since reads the whole history. If several carry the key, the oldest
// wins. Errors are Post's; a channel name needs the channels:read scope
// (groups:read for private channels) to be resolved.
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
		us := since.Add(-findSkew).UnixMicro()
		params.Oldest = fmt.Sprintf("%d.%06d", us/1e6, us%1e6)
	}
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
	s.log.Debug("slack history searched", "channel", m.Channel, "key", notify.ShortKey(key), "found", ref != "")
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
