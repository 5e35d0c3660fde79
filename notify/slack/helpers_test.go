package slack_test

import (
	"bytes"
	"log/slog"
	"sync"
	"testing"

	"github.com/agentledger/agentledger/internal/slackfake"
	"github.com/agentledger/agentledger/notify/slack"
)

// slackToken is the bot token of the tests; no output may show it.
const slackToken = "xoxb-1111-2222-s3cr3tt0k3n"

// logBuffer is a bytes.Buffer safe for concurrent writes.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// newSlack starts a fake Slack with channel "ops" and returns an unpaced
// sink on it (edit may change the config) and the sink's debug log.
func newSlack(t *testing.T, edit func(*slack.Config)) (*slack.Sink, *slackfake.Server, *logBuffer) {
	t.Helper()
	fake := slackfake.New(t, slackToken)
	fake.AddChannel("ops")
	logs := &logBuffer{}
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
