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

// A user group's members come from usergroups.users.list; an unknown
// group is Slack's error.
func TestGroupMembers(t *testing.T) {
	t.Parallel()
	s, fake, logs := newSlack(t, nil)
	fake.AddGroup("S0OPS", "U1", "U2")
	users, err := s.GroupMembers(context.Background(), "S0OPS")
	if err != nil || strings.Join(users, ",") != "U1,U2" {
		t.Fatalf("members: %v, %v", users, err)
	}
	if _, err := s.GroupMembers(context.Background(), "S0NONE"); err == nil || !strings.Contains(err.Error(), "no_such_subteam") {
		t.Errorf("an unknown group: %v", err)
	}
	if strings.Contains(logs.String(), slackToken) {
		t.Error("the token in the logs")
	}
}
