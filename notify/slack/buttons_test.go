package slack_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/notify"
	"github.com/agentledger/agentledger/notify/slack"
)

// Buttons go in an actions block after the message's blocks, styled; an
// update without them leaves none.
func TestPostButtons(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, fake, _ := newSlack(t, nil)
	m := notify.Message{Channel: "ops", Title: "Approval 7", Text: "POST /refunds"}
	ref, err := s.PostButtons(ctx, "k1", m, "blk", []slack.Button{
		{ActionID: "approve", Text: "Approve", Value: "7", Style: "primary"},
		{ActionID: "deny", Text: "Deny", Value: "7", Style: "danger"},
	})
	if err != nil {
		t.Fatal(err)
	}
	b := string(fake.Messages("ops")[0].Blocks)
	for _, want := range []string{`"type":"header"`, `"type":"actions","block_id":"blk"`, `"action_id":"approve"`, `"style":"primary"`,
		`"action_id":"deny"`, `"style":"danger"`, `"value":"7"`} {
		if !strings.Contains(b, want) {
			t.Errorf("blocks lack %s:\n%s", want, b)
		}
	}
	if strings.Index(b, `"type":"actions"`) < strings.Index(b, "POST /refunds") {
		t.Errorf("the buttons come before the text:\n%s", b)
	}
	if again, err := s.PostButtons(ctx, "k1", m, "blk", nil); err != nil || again != ref || len(fake.Messages("ops")) != 1 {
		t.Errorf("the same key posted again: %s, %v, %d messages", again, err, len(fake.Messages("ops")))
	}
	if err := s.Update(ctx, ref, m); err != nil {
		t.Fatal(err)
	}
	if b := string(fake.Messages("ops")[0].Blocks); strings.Contains(b, `"type":"actions"`) {
		t.Errorf("the update kept the buttons:\n%s", b)
	}
}
