package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/agentledgertest/slackfake"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/notify/outbox"
	"github.com/agentledger/agentledger/operator"
)

// waitDelivered waits until the daemon's dispatcher has delivered every
// outbox event, and fails if one failed.
func waitDelivered(t *testing.T, db *pgxpool.Pool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var pending, failed int
		err := db.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE state = 'pending'),
			count(*) FILTER (WHERE state = 'failed') FROM outbox`).Scan(&pending, &failed)
		switch {
		case err != nil:
			t.Fatal(err)
		case failed > 0:
			t.Fatalf("%d notifications failed", failed)
		case pending == 0:
			return
		case time.Now().After(deadline):
			t.Fatalf("%d notifications still pending", pending)
		}
		time.Sleep(10 * time.Millisecond) // polling a condition in another process
	}
}

// With a Slack token, the daemon's dispatcher posts the notify tool's
// message and the rule's message to Slack (here a loopback Slack API)
// through the outbox and the ledger, once each, with the key in the message
// metadata; the token appears nowhere in the daemon's logs.
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
	lines := lines(stderr)
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

	db := testdb.Open(t, url)
	if _, err := outbox.NewRules(db).Put(ctx, outbox.Rule{Name: "ops", Channel: "ops", Events: outbox.Events}, false); err != nil {
		t.Fatal(err)
	}
	s := claims.New(db)
	r, err := s.Enqueue(ctx, claims.EnqueueParams{Kind: "steps", Payload: json.RawMessage(`{"steps":[
		{"tool":"notify","args":{"channel":"ops","text":"deploy finished"}}]}`)})
	if err != nil {
		t.Fatal(err)
	}
	waitTask(t, s, r.Task.ID, agentledger.StateSucceeded)
	waitDelivered(t, db)
	// Replaying the task serves the tool's post from the ledger and
	// updates the rule's message: still two messages.
	if _, err := operator.New(db).Replay(ctx, "", r.Task.ID); err != nil {
		t.Fatal(err)
	}
	waitTask(t, s, r.Task.ID, agentledger.StateSucceeded)
	waitDelivered(t, db)
	msgs := slack.Messages(channel) // in either order: they are separate events
	var tool, rule int
	for _, m := range msgs {
		switch {
		case m.Text == "deploy finished" && m.Updates == 0:
			tool++
		case strings.Contains(m.Text, "Task 1 succeeded") && m.Updates == 1:
			rule++
		}
	}
	if len(msgs) != 2 || tool != 1 || rule != 1 {
		t.Fatalf("Slack has %d messages, want the tool's and the rule's (updated once): %+v", len(msgs), msgs)
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

// A Slack token that Slack refuses stops agentd at start, before any
// task is claimed, with a message naming where the token came from (the
// variable or the file) and never the token.
func TestSlackTokenRefusedAtStart(t *testing.T) {
	t.Parallel()
	const good, wrong = "xoxb-good-1234-s3cr3t", "xoxb-wrong-5678-s3cr3t"
	slack := slackfake.New(t, good)
	slack.AddChannel("ops")
	file := filepath.Join(t.TempDir(), "slack-token")
	if err := os.WriteFile(file, []byte(wrong+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"variable", []string{"AGENTLEDGER_SLACK_TOKEN=" + wrong}, nil, "Slack refused the bot token in AGENTLEDGER_SLACK_TOKEN: slack: invalid_auth"},
		{"file", nil, []string{"--slack-token-file", file}, "Slack refused the bot token in the file " + file + ", --slack-token-file: slack: invalid_auth"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := testdb.Empty(t)
			cmd := agentd(t, append([]string{"DATABASE_URL=" + url, "AGENTLEDGER_SLACK_API_URL=" + slack.APIURL()}, tc.env...), tc.args...)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), tc.want) {
				t.Fatalf("agentd: %v, want exit 2 and %q; output:\n%s", err, tc.want, out)
			}
			if strings.Contains(string(out), wrong) || strings.Contains(string(out), "worker started") {
				t.Fatalf("the output shows the token or a started worker:\n%s", out)
			}
		})
	}
	if n := slack.Calls("chat.postMessage"); n != 0 {
		t.Fatalf("%d posts", n)
	}
}

// A Slack that cannot be reached at start does not stop agentd: tasks do
// not need Slack, and notifications wait in the outbox. The log says so.
func TestSlackUnreachableAtStart(t *testing.T) {
	t.Parallel()
	const token = "xoxb-good-1234-s3cr3t"
	slack := slackfake.New(t, token)
	slack.Inject("auth.test", slackfake.Fault{Drop: true})
	cmd := agentd(t, []string{"DATABASE_URL=" + testdb.Empty(t), "AGENTLEDGER_SLACK_TOKEN=" + token,
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
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		logs.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), "worker started") {
			break
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for sc.Scan() {
		logs.WriteString(sc.Text() + "\n")
	}
	_ = cmd.Wait()
	if !strings.Contains(logs.String(), "its bot token could not be checked") || !strings.Contains(logs.String(), "worker started") ||
		!strings.Contains(logs.String(), `token=AGENTLEDGER_SLACK_TOKEN`) || strings.Contains(logs.String(), token) {
		t.Fatalf("log:\n%s", logs.String())
	}
}
