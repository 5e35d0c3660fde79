package slack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger/agentledgertest/slackfake"
	"github.com/agentledger/agentledger/notify"
	"github.com/agentledger/agentledger/notify/slack"
)

// The token shows nowhere: not in the config or sink printed any way, not
// in errors, not in the logs of a failing run, even when Slack echoes it.
func TestSlackTokenNeverShown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, fake, logs := newSlack(t, func(c *slack.Config) { c.MaxRetryAfter = 1 })
	cfg := slack.Config{Token: slackToken, APIURL: fake.APIURL()}

	var shown []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d", "%T"} {
		shown = append(shown, fmt.Sprintf(verb, cfg), fmt.Sprintf(verb, &cfg), fmt.Sprintf(verb, s),
			fmt.Sprintf(verb, struct{ C slack.Config }{cfg}), fmt.Sprintf(verb, []any{cfg, s}))
	}
	var slogs bytes.Buffer
	for _, h := range []slog.Handler{slog.NewTextHandler(&slogs, nil), slog.NewJSONHandler(&slogs, nil)} {
		slog.New(h).Info("config", "cfg", cfg, "sink", s, "ptr", &cfg)
	}
	js, err := json.Marshal(map[string]any{"cfg": cfg})
	if err != nil {
		t.Fatal(err)
	}
	shown = append(shown, slogs.String(), string(js))

	// A failing run: Slack echoes the token in its errors, drops the
	// connection, rate-limits beyond the wait allowed, and rejects the
	// channel.
	fake.Inject("chat.postMessage",
		slackfake.Fault{Error: "fatal_error", EchoAuth: true},
		slackfake.Fault{Error: "invalid_auth", EchoAuth: true},
		slackfake.Fault{Status: 500, EchoAuth: true},
		slackfake.Fault{Drop: true},
		slackfake.Fault{Status: 429, RetryAfter: 60, EchoAuth: true},
	)
	fake.Inject("conversations.history", slackfake.Fault{Error: "missing_scope", EchoAuth: true})
	for range 5 {
		_, err := s.Post(ctx, key1, ops)
		if err == nil {
			t.Fatal("a faulty post succeeded")
		}
		shown = append(shown, err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err))
	}
	_, err = s.Post(ctx, key1, notify.Message{Channel: "nope", Text: "x"})
	shown = append(shown, err.Error())
	_, _, err = s.Find(ctx, key1, ops, time.Time{})
	shown = append(shown, err.Error(), fmt.Sprintf("%+v", err))
	if !strings.Contains(err.Error(), "[redacted]") {
		t.Fatalf("the echoed token was not scrubbed: %v", err)
	}
	shown = append(shown, logs.String())
	if !strings.Contains(logs.String(), "slack call failed") {
		t.Fatalf("the failing run logged nothing: %s", logs)
	}

	// A broken token file: the error names the file, never its content.
	dir := t.TempDir()
	for _, content := range []string{slackToken + " " + slackToken, ""} {
		path := filepath.Join(dir, "token")
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := slack.New(slack.Config{TokenFile: path})
		if err == nil || !strings.Contains(err.Error(), path) {
			t.Fatalf("token file %q: %v", content, err)
		}
		shown = append(shown, err.Error())
	}
	_, err = slack.New(slack.Config{Token: slackToken + "\n", APIURL: "x"})
	shown = append(shown, err.Error())
	_, err = slack.New(slack.Config{Token: slackToken, TokenFile: "f"})
	shown = append(shown, err.Error())

	for _, out := range shown {
		if strings.Contains(out, slackToken) || strings.Contains(out, "s3cr3t") {
			t.Fatalf("the token shows in %q", out)
		}
	}
}

func TestSlackTokenFile(t *testing.T) {
	t.Parallel()
	fake := slackfake.New(t, slackToken)
	fake.AddChannel("ops")
	path := filepath.Join(t.TempDir(), "slack-token")
	if err := os.WriteFile(path, []byte("  "+slackToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := slack.New(slack.Config{TokenFile: path, APIURL: strings.TrimSuffix(fake.APIURL(), "/"),
		HTTPClient: fake.Client(), PerChannelInterval: -1, WorkspaceRate: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Post(context.Background(), key1, ops); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "absent")
	if _, err := slack.New(slack.Config{TokenFile: missing}); err == nil || strings.Count(err.Error(), missing) != 1 {
		t.Fatalf("missing file: %v", err)
	}
	if _, err := slack.New(slack.Config{}); err == nil {
		t.Fatal("no token accepted")
	}
}
