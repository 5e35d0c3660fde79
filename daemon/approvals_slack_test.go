package daemon_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/agentledgertest/downstream"
	"github.com/agentledger/agentledger/agentledgertest/slackfake"
	"github.com/agentledger/agentledger/approvals"
	"github.com/agentledger/agentledger/approvals/slackui"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/daemon"
	"github.com/agentledger/agentledger/internal/test/logbuf"
	"github.com/agentledger/agentledger/internal/test/testdaemon"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/metrics"
)

// A gated step in a daemon with Slack: its request is posted to the
// approvals channel with buttons, the click (signed as Slack signs) of a
// member of the user group it names decides it, the effect runs once, and the message is
// edited in place to say who decided.
func TestApprovalDecidedFromSlack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const token, secret = "xoxb-9-9-daemonapprovals", "d43m0ns1gn1ngs3cr3t"
	url := testdb.URL(t)
	down := downstream.New()
	t.Cleanup(down.Close)
	fake := slackfake.New(t, token)
	fake.AddChannel("approvals")
	fake.AddGroup("S0OPS", "U1")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	logs := &logbuf.Buffer{}
	m := metrics.New()
	d := daemon.New(daemon.Config{
		Database:    daemon.Database{URL: url},
		Worker:      daemon.Worker{PollInterval: 50 * time.Millisecond},
		Maintenance: daemon.Maintenance{NoCron: true, NoJanitor: true},
		HTTPTools:   daemon.HTTPTools{AllowedHosts: []string{down.URL}},
		Notify: daemon.Notifications{SlackToken: token, SlackAPIURL: fake.APIURL(), SlackInterval: -1, SlackRate: -1,
			Approvals: daemon.Approvals{Channel: "approvals", SigningSecret: secret}},
		API:    daemon.API{Listener: ln},
		Hooks:  daemon.Hooks{Metrics: m},
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Stdout: io.Discard,
	})
	testdaemon.Run(t, d)
	db := testdb.Open(t, url)
	store, gates := claims.New(db), approvals.NewStore(db)
	payload := fmt.Sprintf(`{"steps":[{"tool":"http_request","args":{"method":"POST","url":%q,"body":{"refund":7}},
		"approve":{"approvers":["S0OPS"],"timeout":"1h"}}]}`, down.URL+"/refunds")
	r, err := store.Enqueue(ctx, claims.EnqueueParams{Kind: "steps", Payload: json.RawMessage(payload), MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	pending := waitRequest(t, gates, r.Task.ID)
	msg := waitMessage(t, fake, func(m slackfake.Message) bool { return strings.Contains(string(m.Blocks), `"action_id":"approve"`) })
	if !strings.Contains(string(msg.Blocks), "POST "+down.URL+"/refunds") {
		t.Fatalf("the post does not lay out the call:\n%s", msg.Blocks)
	}

	if code := slackClick(t, "http://"+ln.Addr().String(), secret, "U1", pending.ID); code != http.StatusOK {
		t.Fatalf("click: %d", code)
	}
	task := testdaemon.WaitFinished(t, store, r.Task.ID)
	if task.State != agentledger.StateSucceeded || down.Effects() != 1 {
		t.Fatalf("task %s, %d effects; want succeeded, 1", task.State, down.Effects())
	}
	if n := testutil.ToFloat64(m.ApprovalClicks("decided")); n != 1 {
		t.Fatalf("%v decided clicks counted, want 1", n)
	}
	// Edited twice: who decided, then what the effect did.
	msg = waitMessage(t, fake, func(m slackfake.Message) bool { return m.Updates == 2 })
	if b := string(msg.Blocks); !strings.Contains(b, "approved by U1 (slack)") || !strings.Contains(b, "performed at ") ||
		!strings.Contains(b, "HTTP 201") || strings.Contains(b, `"type":"actions"`) {
		t.Fatalf("the edited message (%d updates):\n%s", msg.Updates, b)
	}
	if n := len(fake.Messages("approvals")); n != 1 {
		t.Errorf("%d messages posted, want 1", n)
	}

	// A gate that names its channel asks there.
	fake.AddChannel("payments")
	payload = fmt.Sprintf(`{"steps":[{"tool":"http_request","args":{"method":"POST","url":%q},"approve":{"channel":"payments"}}]}`, down.URL+"/charges")
	if _, err := store.Enqueue(ctx, claims.EnqueueParams{Kind: "steps", Payload: json.RawMessage(payload)}); err != nil {
		t.Fatal(err)
	}
	msg = waitMessageIn(t, fake, "payments", func(m slackfake.Message) bool { return strings.Contains(string(m.Blocks), "/charges") })
	if n := len(fake.Messages("approvals")); n != 1 {
		t.Errorf("%d messages in the approvals channel, want 1: the payments gate asked there", n)
	}
	if s := logs.String(); strings.Contains(s, secret) || strings.Contains(s, token) {
		t.Errorf("a secret in the logs")
	}
}

// A signing secret file agentd cannot use stops it at start, naming the
// file and never its content.
func TestApprovalsSigningSecretFileRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	twoWords := filepath.Join(dir, "two-words")
	if err := os.WriteFile(twoWords, []byte("s3cr3t one\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	url := testdb.URL(t)
	for _, tc := range []struct{ file, want string }{
		{filepath.Join(dir, "missing"), "Notify.Approvals.SigningSecretFile (agentd --slack-signing-secret-file) " + filepath.Join(dir, "missing") + ": no such file"},
		{twoWords, "must hold one word"},
	} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		d := daemon.New(daemon.Config{
			Database:    daemon.Database{URL: url},
			Maintenance: daemon.Maintenance{NoCron: true, NoJanitor: true},
			Notify:      daemon.Notifications{NoDispatch: true, Approvals: daemon.Approvals{Channel: "approvals", SigningSecretFile: tc.file}},
			API:         daemon.API{Listener: ln},
			Logger:      quiet(),
			Stdout:      io.Discard,
		})
		err = d.Run(context.Background())
		var ce *daemon.ConfigError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("%s: %v, want a config error saying %q", tc.file, err, tc.want)
		}
	}
}

// The signing secret prints and logs as set, never itself.
func TestApprovalsSecretHidden(t *testing.T) {
	const secret = "s1gn1ngs3cr3tn0tsh0wn"
	cfg := daemon.Config{Notify: daemon.Notifications{Approvals: daemon.Approvals{Channel: "approvals", SigningSecret: secret}}}
	logs := &logbuf.Buffer{}
	slog.New(slog.NewJSONHandler(logs, nil)).Info("config", "notify", cfg.Notify, "approvals", cfg.Notify.Approvals)
	for _, s := range []string{fmt.Sprintf("%v", cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg), fmt.Sprintf("%s", cfg.Notify.Approvals), logs.String()} {
		if strings.Contains(s, secret) || !strings.Contains(s, "(set)") {
			t.Errorf("the secret shows, or is not said to be set: %s", s)
		}
	}
}

// waitMessage waits for the approvals channel's first message to be as
// ok says.
func waitMessage(t *testing.T, fake *slackfake.Server, ok func(slackfake.Message) bool) slackfake.Message {
	t.Helper()
	return waitMessageIn(t, fake, "approvals", ok)
}

// waitMessageIn waits for channel's first message to be as ok says.
func waitMessageIn(t *testing.T, fake *slackfake.Server, channel string, ok func(slackfake.Message) bool) slackfake.Message {
	t.Helper()
	for range 400 {
		if ms := fake.Messages(channel); len(ms) > 0 && ok(ms[0]) {
			return ms[0]
		}
		time.Sleep(25 * time.Millisecond) // polling the dispatcher's work: nothing signals it
	}
	t.Fatalf("no such message in #%s in 10 s: %+v", channel, fake.Messages(channel))
	return slackfake.Message{}
}

// slackClick posts user's Approve click on request id, signed with secret
// as Slack signs it.
func slackClick(t *testing.T, base, secret, user string, id int64) int {
	t.Helper()
	p, _ := json.Marshal(map[string]any{"type": "block_actions", "user": map[string]string{"id": user},
		"actions": []map[string]string{{"action_id": slackui.ActionApprove, "block_id": slackui.BlockID, "value": strconv.FormatInt(id, 10)}}})
	body := url.Values{"payload": {string(p)}}.Encode()
	stamp := strconv.FormatInt(time.Now().Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	io.WriteString(mac, "v0:"+stamp+":"+body)
	req, err := http.NewRequest(http.MethodPost, base+slackui.Path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Slack-Request-Timestamp", stamp)
	req.Header.Set("X-Slack-Signature", "v0="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
