package slack_test

import (
	"log/slog"
	"testing"

	"github.com/agentledger/agentledger/agentledgertest/slackfake"
	"github.com/agentledger/agentledger/internal/test/logbuf"
	"github.com/agentledger/agentledger/notify/slack"
)

// slackToken is the bot token of the tests; no output may show it.
const slackToken = "xoxb-1111-2222-s3cr3tt0k3n"

// newSlack starts a fake Slack with channel "ops" and returns an unpaced
// sink on it (edit may change the config) and the sink's debug log.
func newSlack(t *testing.T, edit func(*slack.Config)) (*slack.Sink, *slackfake.Server, *logbuf.Buffer) {
	t.Helper()
	fake := slackfake.New(t, slackToken)
	fake.AddChannel("ops")
	logs := &logbuf.Buffer{}
	cfg := slack.Config{
		Token:              slackToken,
		APIURL:             fake.APIURL(),
		HTTPClient:         fake.Client(),
		PerChannelInterval: -1,
		WorkspaceRate:      -1,
		Logger:             slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if edit != nil {
		edit(&cfg)
	}
	s, err := slack.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s, fake, logs
}
