package slackui_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger/agentledgertest/slackfake"
	"github.com/agentledger/agentledger/approvals"
	"github.com/agentledger/agentledger/approvals/slackui"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/logbuf"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/notify"
	"github.com/agentledger/agentledger/notify/outbox"
	"github.com/agentledger/agentledger/notify/slack"
)

// The tests' secrets; no output may show them.
const (
	signingSecret = "8f742231b10e8888abcd99yyyzzz85a5"
	slackToken    = "xoxb-1111-2222-s3cr3tt0k3n"
)

// world is a database with a request waiting, a fake Slack with channel
// "approvals", a dispatcher delivering to it, and the endpoint.
type world struct {
	t     *testing.T
	db    *pgxpool.Pool
	req   approvals.Request
	fake  *slackfake.Server
	disp  *outbox.Dispatcher
	srv   *httptest.Server
	h     *slackui.Interactions
	logs  *logbuf.Buffer
	reply *replies

	mu       sync.Mutex
	outcomes map[string]int
	// read counts the bytes the endpoint read of request bodies.
	read atomic.Int64
}

func newWorld(t *testing.T, approvers ...string) *world {
	t.Helper()
	ctx := context.Background()
	db := testdb.Open(t, testdb.URL(t))
	task, err := claims.New(db).Enqueue(ctx, claims.EnqueueParams{Kind: "steps", Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	req, asked, err := approvals.NewStore(db).Ensure(ctx, approvals.Request{TaskID: task.Task.ID, Generation: task.Task.Generation,
		Step: "refund/0", Tenant: "acme", Tool: "http_request", Class: "keyed", Target: "https://pay.example",
		Call:      json.RawMessage(`{"method":"POST","url":"https://pay.example/refunds","body":{"amount":4200}}`),
		Approvers: approvers, OnTimeout: "deny"}, time.Hour)
	if err != nil || !asked {
		t.Fatalf("ensure: asked %v: %v", asked, err)
	}
	fake := slackfake.New(t, slackToken)
	fake.AddChannel("approvals")
	logs := &logbuf.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	sink, err := slack.New(slack.Config{Token: slackToken, APIURL: fake.APIURL(), HTTPClient: fake.Client(),
		PerChannelInterval: -1, WorkspaceRate: -1, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, db: db, req: req, fake: fake, logs: logs, reply: newReplies(t), outcomes: map[string]int{}}
	l := ledger.New(db)
	w.disp, err = outbox.NewDispatcher(outbox.NewStore(db), &slackui.Deliverer{Store: approvals.NewStore(db), Ledger: l, Sink: sink,
		Next: notify.NewDeliverer(l, sink)}, outbox.Config{Owner: "test", Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	w.h = &slackui.Interactions{DB: db, Secret: signingSecret, Log: log, OnDecide: func(o string) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.outcomes[o]++
	}}
	w.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		req.Body = counted{req.Body, &w.read}
		w.h.ServeHTTP(rw, req)
	}))
	t.Cleanup(w.srv.Close)
	t.Cleanup(func() {
		if s := logs.String(); strings.Contains(s, signingSecret) || strings.Contains(s, slackToken) {
			t.Errorf("a secret in the logs:\n%s", s)
		}
	})
	return w
}

// dispatch delivers every due event.
func (w *world) dispatch() {
	w.t.Helper()
	for {
		n, err := w.disp.RunOnce(context.Background())
		if err != nil {
			w.t.Fatal(err)
		}
		if n == 0 {
			return
		}
	}
}

// messages are the channel's messages.
func (w *world) messages() []slackfake.Message { return w.fake.Messages("approvals") }

// get reads the request as it stands.
func (w *world) get() approvals.Request {
	w.t.Helper()
	r, err := approvals.NewStore(w.db).Get(context.Background(), "", w.req.ID)
	if err != nil {
		w.t.Fatal(err)
	}
	return r
}

func (w *world) outcome(o string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.outcomes[o]
}

// click is the body of a click of user on action of request id.
func (w *world) click(user, action string, id int64) string {
	p, _ := json.Marshal(map[string]any{
		"type":         "block_actions",
		"user":         map[string]string{"id": user, "name": user},
		"response_url": w.reply.srv.URL + "/respond",
		"actions": []map[string]string{{"type": "button", "block_id": slackui.BlockID, "action_id": action,
			"value": strconv.FormatInt(id, 10)}},
	})
	return url.Values{"payload": {string(p)}}.Encode()
}

// send posts body to the endpoint signed with secret at ts.
func (w *world) send(body, secret string, ts time.Time) int {
	return w.sendReader(body, strings.NewReader(body), secret, ts)
}

// sendReader posts r as the body, signed as signed.
func (w *world) sendReader(signed string, r io.Reader, secret string, ts time.Time) int {
	w.t.Helper()
	req, err := http.NewRequest(http.MethodPost, w.srv.URL+slackui.Path, r)
	if err != nil {
		w.t.Fatal(err)
	}
	stamp := strconv.FormatInt(ts.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	io.WriteString(mac, "v0:"+stamp+":"+signed)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Slack-Request-Timestamp", stamp)
	req.Header.Set("X-Slack-Signature", "v0="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// counted counts what is read of a body.
type counted struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c counted) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// replies collects the ephemeral answers posted to response_url.
type replies struct {
	srv  *httptest.Server
	mu   sync.Mutex
	text []string
}

func newReplies(t *testing.T) *replies {
	r := &replies{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var m struct {
			ResponseType    string `json:"response_type"`
			ReplaceOriginal bool   `json:"replace_original"`
			Text            string `json:"text"`
		}
		if err := json.NewDecoder(req.Body).Decode(&m); err != nil || m.ResponseType != "ephemeral" || m.ReplaceOriginal {
			t.Errorf("an answer that is not ephemeral: %+v %v", m, err)
		}
		r.mu.Lock()
		r.text = append(r.text, m.Text)
		r.mu.Unlock()
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *replies) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.text...)
}
