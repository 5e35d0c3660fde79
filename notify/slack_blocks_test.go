package notify_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
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
	m := notify.SlackMessage{
		Message: notify.Message{Channel: "ops", Text: "Result: 3 rows & <!channel> <https://evil|click>"},
		Title:   "Task 42 succeeded",
		Fields:  []notify.SlackField{{"Task", "42"}, {"Kind", "report"}, {"State", "succeeded"}, {"Attempt", "3"}},
		Footer:  "agentledger · tenant acme",
	}
	ref, err := s.PostSlack(ctx, key1, m)
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
	if err := s.UpdateSlack(ctx, ref, notify.SlackMessage{Message: notify.Message{Text: "plain"}}); err != nil {
		t.Fatal(err)
	}
	if bs := blocksOf(t, fake.Messages("ops")[0].Blocks); len(bs) != 1 || bs[0].Text.Text != "plain" {
		t.Fatalf("updated blocks %+v", bs)
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
		m := notify.SlackMessage{Message: notify.Message{Channel: "ops", Text: text}, Title: strings.Repeat("T", 300),
			Fields: []notify.SlackField{{"Error", strings.Repeat("<", 5000)}}}
		if _, err := s.PostSlack(ctx, string(rune('a'+i)), m); err != nil {
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
