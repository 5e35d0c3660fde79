package tools_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/canonjson"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testenv"
	"github.com/agentledger/agentledger/tools"
)

// env is one test's database (see testenv) and an HTTP client of its own
// (so no test reuses another's connections).
type env struct {
	*testenv.Env
	client *http.Client
}

func newEnv(t *testing.T) *env {
	t.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	return &env{Env: testenv.New(t), client: &http.Client{Transport: tr}}
}

// task enqueues a task of tenant acme and claims it for worker a.
func (e *env) task() *agentledger.Task {
	e.Enqueue(claims.EnqueueParams{Tenant: "acme"})
	return e.Claim("a")
}

// http returns cfg's tools with the env's client.
func (e *env) http(cfg tools.HTTPConfig) (keyed, unsafe *tools.HTTPTool) {
	e.T.Helper()
	cfg.Client = e.client
	keyed, err := tools.NewHTTPRequest(cfg)
	if err != nil {
		e.T.Fatal(err)
	}
	unsafe, err = tools.NewUnsafeHTTP(cfg)
	if err != nil {
		e.T.Fatal(err)
	}
	return keyed, unsafe
}

func (e *env) count(sql string, args ...any) int {
	e.T.Helper()
	var n int
	if err := e.DB.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		e.T.Fatal(err)
	}
	return n
}

func call(task *agentledger.Task, step, args string) tools.Call {
	return tools.Call{Task: task, StepPath: step, Args: []byte(args)}
}

// hostOf is the host:port of a server URL.
// hostOf is the allow-list entry of a test server: its origin, http
// written out (a bare host would mean https).
func hostOf(raw string) string {
	u, _ := url.Parse(raw)
	return "http://" + u.Host
}

func isPermanent(err error) bool {
	var p *agentledger.PermanentError
	return errors.As(err, &p)
}

// sameJSON compares two JSON documents by their canonical forms (the ledger
// stores jsonb, which does not keep the original spelling).
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	ca, err1 := canonjson.Marshal(a)
	cb, err2 := canonjson.Marshal(b)
	if err1 != nil || err2 != nil {
		t.Fatalf("not JSON: %s / %s", a, b)
	}
	return string(ca) == string(cb)
}

// recorder is a downstream that records every request and answers with
// its handler (200 {"ok":true} by default).
type recorder struct {
	*httptest.Server
	mu      sync.Mutex
	reqs    []recorded
	handler func(w http.ResponseWriter, r *http.Request)
}

type recorded struct {
	header http.Header
	body   string
}

func newRecorder(t *testing.T, handler func(w http.ResponseWriter, r *http.Request)) *recorder {
	rec := &recorder{handler: handler}
	rec.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, recorded{header: r.Header.Clone(), body: string(b)})
		rec.mu.Unlock()
		if rec.handler == nil {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"ok":true}`)
			return
		}
		rec.handler(w, r)
	}))
	t.Cleanup(rec.Close)
	return rec
}

func (r *recorder) requests() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]recorded(nil), r.reqs...)
}

func contains(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
