package slack_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentledger/agentledger/notify"
)

// block is what the tests read of a stored block.
type block struct {
	Type string `json:"type"`
	Text *struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"text"`
	Fields []struct {
		Text string `json:"text"`
	} `json:"fields"`
	Elements []struct {
		Text string `json:"text"`
	} `json:"elements"`
}

func blocksOf(t *testing.T, raw json.RawMessage) []block {
	t.Helper()
	var bs []block
	if err := json.Unmarshal(raw, &bs); err != nil {
		t.Fatalf("blocks %s: %v", raw, err)
	}
	return bs
}

func TestSlackBlocks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, fake, _ := newSlack(t, nil)
	m := notify.Message{
		Channel: "ops",
		Text:    "Result: 3 rows & <!channel> <https://evil|click>",
		Title:   "Task 42 succeeded",
		Fields:  []notify.Field{{Label: "Task", Value: "42"}, {Label: "Kind", Value: "report"}, {Label: "State", Value: "succeeded"}, {Label: "Attempt", Value: "3"}},
		Footer:  "agentledger · tenant acme",
	}
	ref, err := s.Post(ctx, key1, m)
	if err != nil {
		t.Fatal(err)
	}
	msg := fake.Messages("ops")[0]
	bs := blocksOf(t, msg.Blocks)
	if len(bs) != 4 || bs[0].Type != "header" || bs[0].Text.Text != "Task 42 succeeded" || bs[0].Text.Type != "plain_text" ||
		bs[1].Type != "section" || len(bs[1].Fields) != 4 || bs[1].Fields[2].Text != "*State*\nsucceeded" ||
		bs[2].Type != "section" || bs[2].Text.Text != "Result: 3 rows &amp; &lt;!channel&gt; &lt;https://evil|click&gt;" ||
		bs[3].Type != "context" || bs[3].Elements[0].Text != "agentledger · tenant acme" {
		t.Fatalf("blocks %s", msg.Blocks)
	}
	if !strings.HasPrefix(msg.Text, "Task 42 succeeded\nResult: 3 rows &amp; &lt;!channel&gt;") {
		t.Fatalf("fallback text %q", msg.Text)
	}
	// An update re-renders; a bare message drops the title and fields.
	if err := s.Update(ctx, ref, notify.Message{Text: "plain"}); err != nil {
		t.Fatal(err)
	}
	if bs := blocksOf(t, fake.Messages("ops")[0].Blocks); len(bs) != 1 || bs[0].Text.Text != "plain" {
		t.Fatalf("updated blocks %+v", bs)
	}
}

// A dispatcher posts a bare message, then updates it in place with a
// title and fields as the task moves on; the key stays findable.
func TestSlackUpdateStructured(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, fake, _ := newSlack(t, nil)
	ref, err := s.Post(ctx, key1, notify.Message{Channel: "ops", Text: "task 42 queued"})
	if err != nil {
		t.Fatal(err)
	}
	if bs := blocksOf(t, fake.Messages("ops")[0].Blocks); len(bs) != 1 || bs[0].Type != "section" {
		t.Fatalf("posted blocks %+v", bs)
	}
	up := notify.Message{
		Channel: "elsewhere", // not used: the ref says where
		Text:    "took 3m & wrote <report.pdf>",
		Title:   "Task 42 succeeded",
		Fields:  []notify.Field{{Label: "Task", Value: "42"}, {Label: "", Value: ""}, {Label: "State", Value: "succeeded"}},
		Footer:  "attempt 2",
	}
	if err := s.Update(ctx, ref, up); err != nil {
		t.Fatal(err)
	}
	msgs := fake.Messages("ops")
	if len(msgs) != 1 || msgs[0].Updates != 1 || len(fake.Messages("elsewhere")) != 0 {
		t.Fatalf("after update: %+v", msgs)
	}
	bs := blocksOf(t, msgs[0].Blocks)
	if len(bs) != 4 || bs[0].Type != "header" || bs[0].Text.Text != "Task 42 succeeded" ||
		len(bs[1].Fields) != 2 || bs[1].Fields[0].Text != "*Task*\n42" || bs[1].Fields[1].Text != "*State*\nsucceeded" ||
		bs[2].Text.Text != "took 3m &amp; wrote &lt;report.pdf&gt;" || bs[3].Type != "context" || bs[3].Elements[0].Text != "attempt 2" {
		t.Fatalf("updated blocks %s", msgs[0].Blocks)
	}
	if msgs[0].Text != "Task 42 succeeded\ntook 3m &amp; wrote &lt;report.pdf&gt;" {
		t.Fatalf("updated fallback text %q", msgs[0].Text)
	}
	if got, found, err := s.Find(ctx, key1, notify.Message{Channel: "ops"}, time.Now().Add(-time.Minute)); !found || err != nil || got != ref {
		t.Fatalf("find after update: %q %v %v", got, found, err)
	}
}

// Long texts are split into sections within Block Kit's limits, which the
// fake enforces as Slack does.
func TestSlackBlocksLongText(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, fake, _ := newSlack(t, nil)
	lines := strings.Repeat(strings.Repeat("word ", 100)+"\n", 80) // 40,080 characters
	for i, text := range []string{lines, strings.Repeat("&", 39000), strings.Repeat("é", 40000)} {
		m := notify.Message{Channel: "ops", Text: text, Title: strings.Repeat("T", 300),
			Fields: []notify.Field{{Label: "Error", Value: strings.Repeat("<", 5000)}}}
		if _, err := s.Post(ctx, string(rune('a'+i)), m); err != nil {
			t.Fatalf("text %d: %v", i, err)
		}
		msgs := fake.Messages("ops")
		bs := blocksOf(t, msgs[len(msgs)-1].Blocks)
		if len(bs) > 50 || utf8.RuneCountInString(bs[0].Text.Text) != 150 {
			t.Fatalf("text %d: %d blocks, header %d", i, len(bs), utf8.RuneCountInString(bs[0].Text.Text))
		}
		total := 0
		for _, b := range bs[2:] {
			total += utf8.RuneCountInString(b.Text.Text)
		}
		if i == 0 && (total < 39000 || !strings.HasSuffix(strings.TrimSpace(bs[2].Text.Text), "word")) {
			t.Fatalf("text %d: %d characters kept; first section ends %q", i, total, bs[2].Text.Text[len(bs[2].Text.Text)-10:])
		}
	}
}
