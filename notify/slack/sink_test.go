package slack_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/agentledgertest/slackfake"
	"github.com/agentledger/agentledger/notify"
	"github.com/agentledger/agentledger/notify/slack"
)

const key1 = "al1-0123456789abcdef0123456789"

var ops = notify.Message{Channel: "ops", Text: "deploy done"}

func TestSlackPostFind(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, fake, _ := newSlack(t, nil)

	if _, found, err := s.Find(ctx, key1, ops, time.Time{}); found || err != nil {
		t.Fatalf("find before post: %v %v", found, err)
	}
	ref, err := s.Post(ctx, key1, ops)
	if err != nil {
		t.Fatal(err)
	}
	msgs := fake.Messages("ops")
	if len(msgs) != 1 || ref != msgs[0].Channel+"/"+msgs[0].TS || !strings.HasPrefix(ref, "C") ||
		msgs[0].Text != "deploy done" || msgs[0].Metadata == nil ||
		msgs[0].Metadata.EventType != "agentledger_effect" || msgs[0].Metadata.EventPayload["key"] != key1 ||
		!strings.Contains(string(msgs[0].Blocks), "deploy done") {
		t.Fatalf("post: ref %q, messages %+v", ref, msgs)
	}
	if got, found, err := s.Find(ctx, key1, ops, time.Time{}); !found || err != nil || got != ref {
		t.Fatalf("find: %q %v %v", got, found, err)
	}
	if _, found, err := s.Find(ctx, "al1-other", ops, time.Time{}); found || err != nil {
		t.Fatalf("find other: %v %v", found, err)
	}
	// The same key again: the first ref, nothing posted.
	if again, err := s.Post(ctx, key1, ops); err != nil || again != ref || len(fake.Messages("ops")) != 1 {
		t.Fatalf("post again: %q %v", again, err)
	}
	if n := fake.Calls("conversations.list"); n != 1 { // the first Find, before the post taught the ID
		t.Fatalf("the posting sink listed channels %d times", n)
	}

	// Another sink (another process) resolves the name and finds it.
	other := mustSink(t, fake)
	if got, found, err := other.Find(ctx, key1, notify.Message{Channel: "#ops"}, time.Time{}); !found || err != nil || got != ref {
		t.Fatalf("other find: %q %v %v", got, found, err)
	}
	if n := fake.Calls("conversations.list"); n != 2 {
		t.Fatalf("conversations.list called %d times", n)
	}
	id, _, _ := slack.ParseRef(ref)
	if got, found, err := other.Find(ctx, key1, notify.Message{Channel: id}, time.Time{}); !found || err != nil || got != ref {
		t.Fatalf("find by ID: %q %v %v", got, found, err)
	}
	// With a since, Find reads from about then on.
	if got, found, err := s.Find(ctx, key1, ops, time.Now().Add(-time.Minute)); !found || err != nil || got != ref {
		t.Fatalf("find since a minute ago: %q %v %v", got, found, err)
	}
	if _, found, err := s.Find(ctx, key1, ops, time.Now().Add(time.Hour)); found || err != nil {
		t.Fatalf("find since in an hour: %v %v", found, err)
	}
	if _, _, err := other.Find(ctx, key1, notify.Message{Channel: "nope"}, time.Time{}); !isPermanent(err) || !strings.Contains(err.Error(), "channel_not_found") {
		t.Fatalf("find in an unknown channel: %v", err)
	}
}

// mustSink is a second, unpaced sink on fake.
func mustSink(t *testing.T, fake *slackfake.Server) *slack.Sink {
	t.Helper()
	s, err := slack.New(slack.Config{Token: slackToken, APIURL: fake.APIURL(), HTTPClient: fake.Client(),
		PerChannelInterval: -1, WorkspaceRate: -1})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func isPermanent(err error) bool {
	var p *agentledger.PermanentError
	return errors.As(err, &p)
}

func TestSlackUpdate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, fake, _ := newSlack(t, nil)
	ref, err := s.Post(ctx, key1, notify.Message{Channel: "ops", Text: "task 7: retrying (attempt 2)"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Update(ctx, ref, notify.Message{Text: "task 7: succeeded"}); err != nil {
		t.Fatal(err)
	}
	msgs := fake.Messages("ops")
	if len(msgs) != 1 || ref != msgs[0].Channel+"/"+msgs[0].TS || msgs[0].Text != "task 7: succeeded" || msgs[0].Updates != 1 ||
		!strings.Contains(string(msgs[0].Blocks), "succeeded") || strings.Contains(string(msgs[0].Blocks), "retrying") ||
		msgs[0].Metadata == nil || msgs[0].Metadata.EventPayload["key"] != key1 {
		t.Fatalf("after update: %+v", msgs)
	}
	if got, found, err := s.Find(ctx, key1, ops, time.Time{}); !found || err != nil || got != ref {
		t.Fatalf("find after update: %q %v %v", got, found, err)
	}

	ch, _, _ := slack.ParseRef(ref)
	err = s.Update(ctx, ch+"/1.000001", notify.Message{Text: "x"})
	if !errors.Is(err, notify.ErrMessageGone) || !isPermanent(err) || !strings.Contains(err.Error(), "message_not_found") {
		t.Fatalf("update of an unknown message: %v", err)
	}
	var se *slack.Error
	if !errors.As(err, &se) || se.Code != "message_not_found" || se.Method != "chat.update" {
		t.Fatalf("not a Error: %#v", err)
	}
	fake.FailNext("chat.update", "cant_update_message")
	if err := s.Update(ctx, ref, notify.Message{Text: "x"}); !errors.Is(err, notify.ErrMessageGone) {
		t.Fatalf("cant_update_message: %v", err)
	}
	if err := s.Update(ctx, "not-a-ref", notify.Message{Text: "x"}); !isPermanent(err) || errors.Is(err, notify.ErrMessageGone) {
		t.Fatalf("bad ref: %v", err)
	}
	fake.FailNext("chat.update", "fatal_error")
	if err := s.Update(ctx, ref, notify.Message{Text: "x"}); err == nil || isPermanent(err) || errors.Is(err, notify.ErrMessageGone) {
		t.Fatalf("fatal_error on update: %v", err)
	}
}

// Slack stored the post but the answer was lost: Post fails, Find adopts
// the message, and nothing is posted twice.
func TestSlackDroppedPost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, fake, _ := newSlack(t, nil)
	fake.DropAfterApply("chat.postMessage")
	if ref, err := s.Post(ctx, key1, ops); err == nil || isPermanent(err) {
		t.Fatalf("dropped post: %q %v", ref, err)
	}
	ref, found, err := s.Find(ctx, key1, ops, time.Time{})
	msgs := fake.Messages("ops")
	if !found || err != nil || len(msgs) != 1 || ref != msgs[0].Channel+"/"+msgs[0].TS {
		t.Fatalf("find: %q %v %v, messages %+v", ref, found, err, msgs)
	}
	if n := fake.Calls("chat.postMessage"); n != 1 {
		t.Fatalf("%d posts", n)
	}
}

func TestSlackRateLimited(t *testing.T) {
	t.Parallel()
	s, fake, logs := newSlack(t, nil)
	fake.RateLimit("chat.postMessage", 2)
	start := time.Now()
	ref, err := s.Post(context.Background(), key1, ops)
	if took := time.Since(start); err != nil || took < 2*time.Second {
		t.Fatalf("post: %q %v after %s", ref, err, took)
	}
	if n, msgs := fake.Calls("chat.postMessage"), fake.Messages("ops"); n != 2 || len(msgs) != 1 {
		t.Fatalf("%d calls, %d messages", n, len(msgs))
	}
	if !strings.Contains(logs.String(), "rate limited") || strings.Contains(logs.String(), "failed") {
		t.Fatalf("log: %s", logs)
	}
}

func TestSlackRateLimitedTooLong(t *testing.T) {
	t.Parallel()
	s, fake, _ := newSlack(t, func(c *slack.Config) { c.MaxRetryAfter = 5 * time.Second })
	fake.RateLimit("chat.postMessage", 60)
	_, err := s.Post(context.Background(), key1, ops)
	var ra *agentledger.RetryAfterError
	if !errors.As(err, &ra) || ra.After != time.Minute || isPermanent(err) {
		t.Fatalf("post: %v", err)
	}
	if n := fake.Calls("chat.postMessage"); n != 1 || len(fake.Messages("ops")) != 0 {
		t.Fatalf("%d calls", n)
	}
	// A waiting call gives up with its context.
	fake.RateLimit("chat.postMessage", 3)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := s.Post(ctx, key1, ops); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cancelled wait: %v", err)
	}
}

func TestSlackPermanentErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name, channel, code, explain string
		setup                        func(*slackfake.Server)
		token                        string
	}{
		{name: "unknown channel", channel: "nope", code: "channel_not_found", explain: "does not exist"},
		{name: "not a member", channel: "priv", code: "not_in_channel", explain: "invite",
			setup: func(f *slackfake.Server) { f.AddChannel("priv"); f.Kick("priv") }},
		{name: "archived", channel: "old", code: "is_archived", explain: "archived",
			setup: func(f *slackfake.Server) { f.AddChannel("old"); f.Archive("old") }},
		{name: "bad token", channel: "ops", code: "invalid_auth", explain: "token", token: "xoxb-wrong"},
		{name: "revoked", channel: "ops", code: "token_revoked", explain: "revoked",
			setup: func(f *slackfake.Server) { f.FailNext("chat.postMessage", "token_revoked") }},
		{name: "scope", channel: "ops", code: "missing_scope", explain: "scope",
			setup: func(f *slackfake.Server) { f.FailNext("chat.postMessage", "missing_scope") }},
		{name: "inactive", channel: "ops", code: "account_inactive", explain: "uninstalled",
			setup: func(f *slackfake.Server) { f.FailNext("chat.postMessage", "account_inactive") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, fake, _ := newSlack(t, func(c *slack.Config) {
				if tc.token != "" {
					c.Token = tc.token
				}
			})
			if tc.setup != nil {
				tc.setup(fake)
			}
			_, err := s.Post(ctx, key1, notify.Message{Channel: tc.channel, Text: "x"})
			if !isPermanent(err) || !strings.HasPrefix(err.Error(), "slack: "+tc.code+": ") || !strings.Contains(err.Error(), tc.explain) {
				t.Fatalf("post: %v", err)
			}
			if n := fake.Calls("chat.postMessage"); n != 1 {
				t.Fatalf("%d calls: retried", n)
			}
		})
	}
}

func TestSlackTransientErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, fake, _ := newSlack(t, nil)
	fake.FailNext("chat.postMessage", "fatal_error")
	_, err := s.Post(ctx, key1, ops)
	var se *slack.Error
	if err == nil || isPermanent(err) || !errors.As(err, &se) || se.Code != "fatal_error" {
		t.Fatalf("fatal_error: %v", err)
	}
	fake.Inject("chat.postMessage", slackfake.Fault{Status: 503})
	if _, err := s.Post(ctx, key1, ops); err == nil || isPermanent(err) || !strings.Contains(err.Error(), "503") {
		t.Fatalf("503: %v", err)
	}
	fake.Inject("conversations.history", slackfake.Fault{Drop: true})
	if _, _, err := s.Find(ctx, key1, notify.Message{Channel: "C00000001"}, time.Time{}); err == nil || isPermanent(err) {
		t.Fatalf("dropped history: %v", err)
	}
	if n := fake.Calls("chat.postMessage"); n != 2 || len(fake.Messages("ops")) != 0 {
		t.Fatalf("%d calls", n)
	}
}

// Find pages through the history (999 messages a page) and adopts the
// oldest message with the key.
func TestSlackFindPaging(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, fake, _ := newSlack(t, nil)
	ref, err := s.Post(ctx, key1, ops)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2100 {
		var md *slackfake.Metadata
		if i%3 == 0 {
			md = &slackfake.Metadata{EventType: "agentledger_effect", EventPayload: map[string]any{"key": "al1-another"}}
		}
		fake.Seed("ops", "chatter", md)
	}
	fake.Seed("ops", "a duplicate", &slackfake.Metadata{EventType: "agentledger_effect", EventPayload: map[string]any{"key": key1}})
	got, found, err := s.Find(ctx, key1, ops, time.Time{})
	if !found || err != nil || got != ref {
		t.Fatalf("find: %q %v %v, want %q", got, found, err, ref)
	}
	if n := fake.Calls("conversations.history"); n != 3 {
		t.Fatalf("%d history pages", n)
	}
}

func TestSlackPacing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const interval = 50 * time.Millisecond
	s, fake, _ := newSlack(t, func(c *slack.Config) { c.PerChannelInterval = interval })
	start := time.Now()
	ref, err := s.Post(ctx, "k1", ops)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Post(ctx, "k2", ops); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < interval {
		t.Fatalf("two posts to one channel in %s", took)
	}
	start = time.Now()
	if err := s.Update(ctx, ref, ops); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < interval/2 {
		t.Fatalf("update right after a post, in %s", took)
	}

	// A wait gives up with its context, and nothing is posted.
	slow, fake2, _ := newSlack(t, func(c *slack.Config) { c.PerChannelInterval = time.Hour })
	if _, err := slow.Post(ctx, "k1", ops); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := slow.Post(short, "k2", ops); !errors.Is(err, context.DeadlineExceeded) || len(fake2.Messages("ops")) != 1 {
		t.Fatalf("paced post past its deadline: %v", err)
	}
	if len(fake.Messages("ops")) != 2 {
		t.Fatal("messages lost")
	}
}

func TestSlackInvalidCalls(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, fake, _ := newSlack(t, nil)
	if _, err := s.Post(ctx, "", ops); !isPermanent(err) {
		t.Fatalf("empty key: %v", err)
	}
	if _, err := s.Post(ctx, key1, notify.Message{Text: "x"}); !isPermanent(err) {
		t.Fatalf("no channel: %v", err)
	}
	if _, _, err := s.Find(ctx, "", ops, time.Time{}); !isPermanent(err) {
		t.Fatalf("find empty key: %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Post(cancelled, key1, ops); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	if n := fake.Calls("chat.postMessage"); n != 0 {
		t.Fatalf("%d calls", n)
	}
}

// Find reads the history from where Slack's clock stood at since, as
// Slack's answers showed it, however far it is from ours: a fresh sink
// reads it with auth.test first, and the window starts at since in
// Slack's clock (less a margin), not in ours.
func TestSlackFindSkewedClock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, skew := range []time.Duration{-150 * time.Second, 150 * time.Second} {
		s, fake, _ := newSlack(t, nil)
		fake.Skew(skew)
		fake.Backfill("ops", 600, 10*time.Minute) // one a second
		since := time.Now()
		fake.DropAfterApply("chat.postMessage")
		if _, err := s.Post(ctx, key1, ops); err == nil {
			t.Fatal("the dropped post succeeded")
		}
		// Another process, which has heard nothing from Slack yet (given
		// the channel's ID, it need not list the channels).
		other := mustSink(t, fake)
		msgs := fake.Messages("ops")
		ref, found, err := other.Find(ctx, key1, notify.Message{Channel: msgs[0].Channel}, since)
		if !found || err != nil || ref != msgs[len(msgs)-1].Channel+"/"+msgs[len(msgs)-1].TS {
			t.Fatalf("Slack %s off: find %q %v %v", skew, ref, found, err)
		}
		if n := fake.Calls("auth.test"); n != 1 {
			t.Errorf("Slack %s off: %d auth.test calls, want 1 to read its clock", skew, n)
		}
		// The window began 30s before since in Slack's clock (to the
		// second its Date header tells): about 30 of the backfilled
		// messages, not all the 150s the clocks are apart.
		forms := fake.Forms("conversations.history")
		oldest, ok := tsTime(forms[len(forms)-1].Get("oldest"))
		if want := since.Add(skew - 30*time.Second); !ok || oldest.Before(want.Add(-2*time.Second)) || oldest.After(want.Add(time.Second)) {
			t.Errorf("Slack %s off: history read from %s, want about %s", skew, oldest, want)
		}
	}
}

func tsTime(ts string) (time.Time, bool) {
	f, err := strconv.ParseFloat(ts, 64)
	return time.Unix(0, int64(f*1e9)), err == nil
}
