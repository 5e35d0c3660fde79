package main

import (
	"bufio"
	"context"
	"encoding/json"
	"strings"
	"syscall"
	"testing"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/slackfake"
	"github.com/agentledger/agentledger/internal/testdb"
)

// With a Slack token, the notify tool posts to Slack (here a loopback Slack
// API) through the ledger, once, with its key in the message metadata; the
// token appears nowhere in the daemon's logs.
func TestNotifyToolPostsToSlack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const token = "xoxb-test-1234-secret-token"
	slack := slackfake.New(t, token)
	channel := slack.AddChannel("ops")
	url := testdb.Empty(t)
	cmd := agentd(t, []string{"DATABASE_URL=" + url, "AGENTLEDGER_SLACK_TOKEN=" + token,
		"AGENTLEDGER_SLACK_API_URL=" + slack.APIURL()}, "--grace", "1s")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill() //nolint:errcheck
	var logs strings.Builder
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	next := func(want string) {
		t.Helper()
		for l := range lines {
			logs.WriteString(l + "\n")
			if strings.Contains(l, want) {
				return
			}
		}
		t.Fatalf("agentd exited before logging %q", want)
	}
	next("notifications: Slack")
	next("worker started")

	s := claims.New(testdb.Open(t, url))
	r, err := s.Enqueue(ctx, claims.EnqueueParams{Kind: "steps", Payload: json.RawMessage(`{"steps":[
		{"tool":"notify","args":{"channel":"ops","text":"deploy finished"}}]}`)})
	if err != nil {
		t.Fatal(err)
	}
	waitTask(t, s, r.Task.ID, agentledger.StateSucceeded)
	// Replaying the task serves the post from the ledger: still one message.
	if _, err := s.Requeue(ctx, "", r.Task.ID, claims.Replay); err != nil {
		t.Fatal(err)
	}
	waitTask(t, s, r.Task.ID, agentledger.StateSucceeded)
	msgs := slack.Messages(channel)
	if len(msgs) != 1 || msgs[0].Text != "deploy finished" {
		t.Fatalf("Slack has %d messages: %+v", len(msgs), msgs)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for l := range lines {
		logs.WriteString(l + "\n")
	}
	cmd.Wait() //nolint:errcheck
	if strings.Contains(logs.String(), token) {
		t.Fatal("the Slack token appears in agentd's logs")
	}
}
