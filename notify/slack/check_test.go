package slack_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/agentledgertest/slackfake"
	"github.com/agentledger/agentledger/notify/slack"
)

// Check tells whom a good token belongs to; a token Slack refuses is a
// permanent error that explains itself and does not show the token; an
// unreachable Slack is transient.
func TestSlackCheck(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, fake, logs := newSlack(t, nil)
	id, err := s.Check(ctx)
	if err != nil || id.Team == "" || id.BotID == "" || id.User == "" {
		t.Fatalf("check: %+v %v", id, err)
	}

	const wrong = "xoxb-9999-wr0ngt0k3n"
	bad, _, _ := newSlack(t, func(c *slack.Config) { c.Token = wrong })
	_, err = bad.Check(ctx)
	var se *slack.Error
	if !isPermanent(err) || !errors.As(err, &se) || se.Code != "invalid_auth" || se.Method != "auth.test" ||
		!strings.Contains(err.Error(), "rejected the bot token") || strings.Contains(err.Error(), wrong) {
		t.Fatalf("wrong token: %v", err)
	}
	for _, code := range []string{"account_inactive", "token_revoked", "not_authed"} {
		fake.Inject("auth.test", slackfake.Fault{Error: code})
		if _, err := s.Check(ctx); !isPermanent(err) || !strings.HasPrefix(err.Error(), "slack: "+code) || strings.Contains(err.Error(), slackToken) {
			t.Fatalf("%s: %v", code, err)
		}
	}
	fake.Inject("auth.test", slackfake.Fault{Drop: true})
	if _, err := s.Check(ctx); err == nil || isPermanent(err) {
		t.Fatalf("unreachable: %v", err)
	}
	if strings.Contains(logs.String(), slackToken) {
		t.Fatal("the token shows in the log")
	}
}
