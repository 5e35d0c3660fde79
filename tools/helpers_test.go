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
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/canonjson"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/testdb"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/tools"
)

// env is one test's database: a task store with a pinned clock, a ledger,
// and an HTTP client of its own (so no test reuses another's connections).
type env struct {
	t      *testing.T
	db     *pgxpool.Pool
	claims *claims.Store
	ledger *ledger.Ledger
	client *http.Client
	mu     sync.Mutex
	now    time.Time
}

func newEnv(t *testing.T) *env {
	t.Helper()
	db := testdb.New(t)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	e := &env{t: t, db: db, claims: claims.New(db), ledger: ledger.New(db),
		client: &http.Client{Transport: tr}, now: time.Now().UTC().Truncate(time.Second)}
	e.claims.Now = e.clock
	return e
}

func (e *env) clock() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.now
}

// task enqueues a task of tenant acme and claims it for worker a.
func (e *env) task() *agentledger.Task {
	e.t.Helper()
	if _, err := e.claims.Enqueue(context.Background(), claims.EnqueueParams{Tenant: "acme", Kind: "steps"}); err != nil {
		e.t.Fatal(err)
	}
	return e.claim("a")
}

func (e *env) claim(worker string) *agentledger.Task {
	e.t.Helper()
	got, err := e.claims.Claim(context.Background(), claims.ClaimParams{Queue: "default", Worker: worker, Limit: 1, Lease: time.Minute})
	if err != nil || len(got) != 1 {
		e.t.Fatalf("claim: %d tasks, %v", len(got), err)
	}
	return got[0]
}

// expireAndReclaim lets the current lease run out and claims the task
// again for worker b.
func (e *env) expireAndReclaim() *agentledger.Task {
	e.t.Helper()
	e.mu.Lock()
	e.now = e.now.Add(2 * time.Minute)
	e.mu.Unlock()
	return e.claim("b")
}

// http returns cfg's tools with the env's client.
func (e *env) http(cfg tools.HTTPConfig) (keyed, unsafe *tools.HTTPTool) {
	e.t.Helper()
	cfg.Client = e.client
	keyed, err := tools.NewHTTPRequest(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	unsafe, err = tools.NewUnsafeHTTP(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	return keyed, unsafe
}

// ledgerText is every ledger row as text, for searching.
func (e *env) ledgerText() string {
	e.t.Helper()
	var s string
	if err := e.db.QueryRow(context.Background(), `SELECT coalesce(string_agg(l::text, E'\n'), '') FROM ledger l`).Scan(&s); err != nil {
		e.t.Fatal(err)
	}
	return s
}

func (e *env) count(sql string, args ...any) int {
	e.t.Helper()
	var n int
	if err := e.db.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

func call(task *agentledger.Task, step, args string) tools.Call {
	return tools.Call{Task: task, StepPath: step, Args: []byte(args)}
}

// hostOf is the host:port of a server URL.
func hostOf(raw string) string {
	u, _ := url.Parse(raw)
	return u.Host
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
