package slackfake_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/agentledger/agentledger/agentledgertest/slackfake"
)

const token = "xoxb-fake-0123456789"

func client(s *slackfake.Server, tok string) *slack.Client {
	return slack.New(tok, slack.OptionAPIURL(s.APIURL()), slack.OptionHTTPClient(s.Client()))
}

func meta(key string) slack.MsgOption {
	return slack.MsgOptionMetadata(slack.SlackMetadata{EventType: "agentledger_effect", EventPayload: map[string]any{"key": key}})
}

func TestPostUpdateHistory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := slackfake.New(t, token)
	id := s.AddChannel("ops")
	c := client(s, token)

	ch, ts1, err := c.PostMessageContext(ctx, "#ops", slack.MsgOptionText("one", false), meta("k1"),
		slack.MsgOptionBlocks(slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, "*one*", false, false), nil, nil)))
	if err != nil || ch != id {
		t.Fatalf("post: %q %v", ch, err)
	}
	_, ts2, err := c.PostMessageContext(ctx, id, slack.MsgOptionText("two", false))
	if err != nil || ts2 <= ts1 {
		t.Fatalf("post 2: %q after %q, %v", ts2, ts1, err)
	}
	if _, _, _, err := c.UpdateMessageContext(ctx, id, ts1, slack.MsgOptionText("one, edited", false)); err != nil {
		t.Fatal(err)
	}
	msgs := s.Messages("ops")
	if len(msgs) != 2 || msgs[0].Text != "one, edited" || msgs[0].Updates != 1 || msgs[0].TS != ts1 ||
		msgs[0].Metadata == nil || msgs[0].Metadata.EventPayload["key"] != "k1" || msgs[0].Blocks == nil {
		t.Fatalf("messages %+v", msgs)
	}

	h, err := c.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: id, IncludeAllMetadata: true})
	if err != nil || len(h.Messages) != 2 || h.Messages[0].Timestamp != ts2 || h.Messages[1].Metadata.EventPayload["key"] != "k1" ||
		h.Messages[1].Text != "one, edited" || len(h.Messages[1].Blocks.BlockSet) != 1 {
		t.Fatalf("history %+v %v", h, err)
	}
	h, err = c.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: id})
	if err != nil || h.Messages[1].Metadata.EventType != "" {
		t.Fatalf("metadata without include_all_metadata: %+v %v", h.Messages[1].Metadata, err)
	}
	// Oldest bounds the history (exclusive by default).
	h, err = c.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: id, Oldest: ts1})
	if err != nil || len(h.Messages) != 1 || h.Messages[0].Timestamp != ts2 {
		t.Fatalf("oldest: %+v %v", h, err)
	}
	if got := s.Calls("chat.postMessage"); got != 2 {
		t.Fatalf("%d posts", got)
	}
}

func TestHistoryPaging(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := slackfake.New(t, token)
	id := s.AddChannel("ops")
	for i := range 25 {
		s.Seed("ops", fmt.Sprint(i), nil)
	}
	c := client(s, token)
	var got []string
	p := slack.GetConversationHistoryParameters{ChannelID: id, Limit: 10}
	for pages := 1; ; pages++ {
		h, err := c.GetConversationHistoryContext(ctx, &p)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range h.Messages {
			got = append(got, m.Text)
		}
		if !h.HasMore {
			if pages != 3 {
				t.Fatalf("%d pages", pages)
			}
			break
		}
		p.Cursor = h.ResponseMetaData.NextCursor
	}
	if len(got) != 25 || got[0] != "24" || got[24] != "0" {
		t.Fatalf("paged %v", got)
	}
}

func TestList(t *testing.T) {
	t.Parallel()
	s := slackfake.New(t, token)
	for i := range 5 {
		s.AddChannel(fmt.Sprintf("c%d", i))
	}
	s.Archive("c1")
	c := client(s, token)
	var names []string
	p := slack.GetConversationsParameters{Limit: 2, ExcludeArchived: true}
	for {
		chans, next, err := c.GetConversationsContext(context.Background(), &p)
		if err != nil {
			t.Fatal(err)
		}
		for _, ch := range chans {
			names = append(names, ch.Name)
		}
		if next == "" {
			break
		}
		p.Cursor = next
	}
	if strings.Join(names, ",") != "c0,c2,c3,c4" {
		t.Fatalf("listed %v", names)
	}
}

func slackCode(err error) string {
	var r slack.SlackErrorResponse
	if errors.As(err, &r) {
		return r.Err
	}
	return ""
}

func TestErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := slackfake.New(t, token)
	id := s.AddChannel("ops")
	s.AddChannel("gone")
	s.Archive("gone")
	s.AddChannel("private")
	s.Kick("private")
	c := client(s, token)
	text := slack.MsgOptionText("x", false)
	for _, tc := range []struct {
		ch, want string
		opts     []slack.MsgOption
	}{
		{"nope", "channel_not_found", []slack.MsgOption{text}},
		{"gone", "is_archived", []slack.MsgOption{text}},
		{"private", "not_in_channel", []slack.MsgOption{text}},
		{"ops", "no_text", nil},
		{"ops", "msg_too_long", []slack.MsgOption{slack.MsgOptionText(strings.Repeat("x", 40001), false)}},
		{"ops", "invalid_blocks", []slack.MsgOption{text, slack.MsgOptionBlocks(
			slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, strings.Repeat("x", 3001), false, false), nil, nil))}},
	} {
		if _, _, err := c.PostMessageContext(ctx, tc.ch, tc.opts...); slackCode(err) != tc.want {
			t.Errorf("post to %s: %v, want %s", tc.ch, err, tc.want)
		}
	}
	if _, _, _, err := c.UpdateMessageContext(ctx, id, "1.000001", text); slackCode(err) != "message_not_found" {
		t.Errorf("update: %v", err)
	}
	if _, _, _, err := c.UpdateMessageContext(ctx, "ops", "1.000001", text); slackCode(err) != "channel_not_found" {
		t.Errorf("update by name: %v", err)
	}
	if _, _, err := client(s, "xoxb-wrong").PostMessageContext(ctx, "ops", text); slackCode(err) != "invalid_auth" {
		t.Errorf("wrong token: %v", err)
	}
	if _, _, err := client(s, "").PostMessageContext(ctx, "ops", text); slackCode(err) != "not_authed" {
		t.Errorf("no token: %v", err)
	}
	if n := len(s.Messages("ops")); n != 0 {
		t.Fatalf("%d messages stored", n)
	}
}

func TestFaults(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := slackfake.New(t, token)
	s.AddChannel("ops")
	c := client(s, token)
	text := slack.MsgOptionText("x", false)

	s.RateLimit("chat.postMessage", 7)
	var rl *slack.RateLimitedError
	if _, _, err := c.PostMessageContext(ctx, "ops", text); !errors.As(err, &rl) || rl.RetryAfter.Seconds() != 7 {
		t.Fatalf("429: %v", err)
	}
	s.FailNext("chat.postMessage", "fatal_error")
	if _, _, err := c.PostMessageContext(ctx, "ops", text); slackCode(err) != "fatal_error" {
		t.Fatalf("fatal_error: %v", err)
	}
	s.Inject("chat.postMessage", slackfake.Fault{Status: 503})
	var sc slack.StatusCodeError
	if _, _, err := c.PostMessageContext(ctx, "ops", text); !errors.As(err, &sc) || sc.Code != 503 {
		t.Fatalf("503: %v", err)
	}
	if n := len(s.Messages("ops")); n != 0 {
		t.Fatalf("%d messages stored by faults without Apply", n)
	}
	s.DropAfterApply("chat.postMessage")
	if _, _, err := c.PostMessageContext(ctx, "ops", text); err == nil {
		t.Fatal("dropped post answered")
	}
	s.Inject("chat.postMessage", slackfake.Fault{Apply: true, Error: "fatal_error", EchoAuth: true})
	if _, _, err := c.PostMessageContext(ctx, "ops", text); !strings.Contains(slackCode(err), token) {
		t.Fatalf("echo: %v", err)
	}
	if n := len(s.Messages("ops")); n != 2 {
		t.Fatalf("%d messages stored by applied faults, want 2", n)
	}
	if _, _, err := c.PostMessageContext(ctx, "ops", text); err != nil {
		t.Fatalf("after the faults: %v", err)
	}
	if got := s.Calls("chat.postMessage"); got != 6 {
		t.Fatalf("%d calls", got)
	}
}

// auth.test answers whom a good token belongs to, and Slack's errors for a
// wrong or missing one.
func TestAuthTest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := slackfake.New(t, token)
	id, err := client(s, token).AuthTestContext(ctx)
	if err != nil || id.Team == "" || id.BotID == "" || id.UserID == "" {
		t.Fatalf("auth.test: %+v %v", id, err)
	}
	if _, err := client(s, "xoxb-wrong").AuthTestContext(ctx); err == nil || err.Error() != "invalid_auth" {
		t.Fatalf("wrong token: %v", err)
	}
	if _, err := client(s, "").AuthTestContext(ctx); err == nil || err.Error() != "not_authed" {
		t.Fatalf("no token: %v", err)
	}
	if n := s.Calls("auth.test"); n != 3 {
		t.Fatalf("%d calls", n)
	}
}

// A skewed server stamps its messages and its answers' Date with its own
// clock; a backfilled channel holds others' messages over the span.
func TestSkewAndBackfill(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := slackfake.New(t, token)
	id := s.AddChannel("ops")
	s.Skew(-150 * time.Second)
	s.Backfill("ops", 100, time.Minute)
	before := time.Now()
	_, ts, err := client(s, token).PostMessageContext(ctx, id, slack.MsgOptionText("late", false))
	if err != nil {
		t.Fatal(err)
	}
	if at := tsTime(t, ts); at.After(before.Add(-149*time.Second)) || at.Before(before.Add(-151*time.Second)) {
		t.Fatalf("ts %s is %s from the real clock, want about -150s", ts, at.Sub(before))
	}
	msgs := s.Messages("ops")
	if len(msgs) != 101 || msgs[100].TS != ts {
		t.Fatalf("%d messages", len(msgs))
	}
	first, last := tsTime(t, msgs[0].TS), tsTime(t, msgs[99].TS)
	if span := last.Sub(first); span < 58*time.Second || span > time.Minute || !last.Before(tsTime(t, ts)) {
		t.Fatalf("backfill spans %s, from %s to %s", span, msgs[0].TS, msgs[99].TS)
	}

	resp, err := s.Client().Post(s.APIURL()+"auth.test", "application/x-www-form-urlencoded", strings.NewReader("token="+token))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	date, err := http.ParseTime(resp.Header.Get("Date"))
	if err != nil || date.After(time.Now().Add(-148*time.Second)) || date.Before(time.Now().Add(-152*time.Second)) {
		t.Fatalf("Date %q (%v), want about 150s behind", resp.Header.Get("Date"), err)
	}
}

func tsTime(t *testing.T, ts string) time.Time {
	t.Helper()
	sec, frac, _ := strings.Cut(ts, ".")
	s, err1 := strconv.ParseInt(sec, 10, 64)
	us, err2 := strconv.ParseInt(frac, 10, 64)
	if err1 != nil || err2 != nil || len(frac) != 6 {
		t.Fatalf("ts %q", ts)
	}
	return time.Unix(s, us*1000)
}
