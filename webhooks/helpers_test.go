package webhooks_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/logbuf"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/webhooks"
)

// The test sources' secrets: none may ever appear in a log or an answer.
const (
	ghSecret    = "gh-secret-Qm9vbXN0aWNr"
	slackSecret = "slack-secret-8f742231b10e"
	ciSecret    = "ci-secret-c2VjcmV0IQ"
)

// testSources are a GitHub, a Slack and a generic HMAC source.
func testSources() []webhooks.Source {
	return []webhooks.Source{
		{Name: "gh", Type: webhooks.TypeGitHub, Secret: ghSecret,
			Tenant: "acme", Queue: "hooks", Kind: "github_event", Priority: 7, MaxAttempts: 3},
		{Name: "slack", Type: webhooks.TypeSlack, Secret: slackSecret, Kind: "slack_event"},
		{Name: "ci", Type: webhooks.TypeHMAC, Secret: ciSecret, Header: "X-Signature",
			DeliveryHeader: "X-Delivery", EventHeader: "X-Event", Kind: "ci_event", Payload: webhooks.PayloadBody},
	}
}

// env is one test's database and API server with the handler mounted as the
// API server mounts it.
type env struct {
	t    *testing.T
	db   *pgxpool.Pool
	url  string
	logs *logbuf.Buffer
	now  time.Time // the handler's clock, for Slack timestamps

	mu       sync.Mutex
	outcomes []string // "source outcome"
}

// newEnv starts a server for sources (testSources if nil); edit changes
// the Config.
func newEnv(t *testing.T, sources []webhooks.Source, edit func(*webhooks.Config)) *env {
	t.Helper()
	return newEnvOn(t, testdb.New(t), sources, edit)
}

// newEnvOn is newEnv over the database db.
func newEnvOn(t *testing.T, db *pgxpool.Pool, sources []webhooks.Source, edit func(*webhooks.Config)) *env {
	t.Helper()
	if sources == nil {
		sources = testSources()
	}
	e := &env{t: t, db: db, logs: &logbuf.Buffer{}, now: time.Now().Truncate(time.Second)}
	cfg := webhooks.Config{
		Logger: slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Now:    func() time.Time { return e.now },
		OnDelivery: func(source, outcome string) {
			e.mu.Lock()
			e.outcomes = append(e.outcomes, source+" "+outcome)
			e.mu.Unlock()
		},
	}
	if edit != nil {
		edit(&cfg)
	}
	h, err := webhooks.New(e.db, sources, cfg)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /v1/hooks/{source}", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	e.url = srv.URL
	return e
}

// answer is one response, its body kept raw and decoded.
type answer struct {
	status int
	header http.Header
	raw    string
	json   map[string]any
}

func (a answer) code() string { s, _ := a.json["code"].(string); return s }

func (a answer) taskID() int64 {
	f, _ := a.json["task_id"].(float64)
	return int64(f)
}

// post sends body to source with headers (name, value pairs).
func (e *env) post(source string, body io.Reader, headers ...string) answer {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.url+"/v1/hooks/"+source, body)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	a := answer{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &a.json); err != nil {
			e.t.Fatalf("answer %d is not JSON: %q", a.status, raw)
		}
	}
	return a
}

// github posts a GitHub delivery signed with secret.
func (e *env) github(secret, delivery, event, body string) answer {
	e.t.Helper()
	return e.post("gh", strings.NewReader(body),
		"X-Hub-Signature-256", "sha256="+mac(secret, body),
		"X-GitHub-Delivery", delivery, "X-GitHub-Event", event)
}

// slack posts a Slack request signed with secret at ts.
func (e *env) slack(secret string, ts time.Time, body string) answer {
	e.t.Helper()
	s := strconv.FormatInt(ts.Unix(), 10)
	return e.post("slack", strings.NewReader(body),
		"X-Slack-Request-Timestamp", s,
		"X-Slack-Signature", "v0="+mac(secret, "v0:"+s+":"+body))
}

func mac(secret, msg string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(msg))
	return hex.EncodeToString(m.Sum(nil))
}

// wantProblem checks for an RFC 9457 answer with status and code.
func (e *env) wantProblem(a answer, status int, code string) {
	e.t.Helper()
	if a.status != status || a.code() != code {
		e.t.Fatalf("answer %d %s, want %d %s", a.status, a.raw, status, code)
	}
	if ct := a.header.Get("Content-Type"); ct != "application/problem+json" {
		e.t.Errorf("Content-Type %q, want application/problem+json", ct)
	}
	for _, k := range []string{"type", "title", "status", "detail", "code"} {
		if _, ok := a.json[k]; !ok {
			e.t.Errorf("problem has no %q: %s", k, a.raw)
		}
	}
	if a.json["type"] != webhooks.ProblemType+code {
		e.t.Errorf("problem type %v, want %s", a.json["type"], webhooks.ProblemType+code)
	}
	if got, _ := a.json["status"].(float64); int(got) != status {
		e.t.Errorf("problem status %v, want %d", a.json["status"], status)
	}
}

// counts returns the numbers of inbox rows and tasks.
func (e *env) counts() (inbox, tasks int) {
	e.t.Helper()
	ctx := context.Background()
	if err := e.db.QueryRow(ctx, "SELECT (SELECT count(*) FROM inbox), (SELECT count(*) FROM tasks)").Scan(&inbox, &tasks); err != nil {
		e.t.Fatal(err)
	}
	return inbox, tasks
}

func (e *env) wantCounts(inbox, tasks int) {
	e.t.Helper()
	if i, n := e.counts(); i != inbox || n != tasks {
		e.t.Fatalf("%d inbox rows and %d tasks, want %d and %d", i, n, inbox, tasks)
	}
}

// task reads a task and checks that the inbox points at it.
func (e *env) task(source, delivery string, id int64) *agentledger.Task {
	e.t.Helper()
	ctx := context.Background()
	task, err := claims.New(e.db).Get(ctx, "", id)
	if err != nil {
		e.t.Fatal(err)
	}
	var inboxTask *int64
	if err := e.db.QueryRow(ctx, "SELECT task_id FROM inbox WHERE source = $1 AND delivery_id = $2",
		source, delivery).Scan(&inboxTask); err != nil {
		e.t.Fatalf("inbox row of %s/%s: %v", source, delivery, err)
	}
	if inboxTask == nil || *inboxTask != id {
		e.t.Fatalf("inbox row of %s/%s points at task %v, want %d", source, delivery, inboxTask, id)
	}
	return task
}

func (e *env) outcomesSeen() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.outcomes...)
}

// jsonEqual reports whether a and b are the same JSON value.
func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	xs, _ := json.Marshal(x)
	ys, _ := json.Marshal(y)
	return bytes.Equal(xs, ys)
}

func slogJSON(w io.Writer) *slog.Logger { return slog.New(slog.NewJSONHandler(w, nil)) }
