package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/httpapi"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/operator"
	"github.com/agentledger/agentledger/tenants"
)

// env is one test's API: a database of its own and a server on loopback.
type env struct {
	t       *testing.T
	db      *pgxpool.Pool
	tenants *tenants.Store
	claims  *claims.Store
	srv     *httpapi.Server
	ts      *httptest.Server
}

// newServer returns a Server over a new database; cfg's DB, Tenants and
// Claims are filled in, and its Logger unless set.
func newServer(t *testing.T, cfg httpapi.Config) (*httpapi.Server, *pgxpool.Pool) {
	t.Helper()
	db := testdb.New(t)
	cfg.DB, cfg.Tenants, cfg.Claims, cfg.Operator = db, tenants.NewStore(db), claims.New(db), operator.New(db)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	srv, err := httpapi.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return srv, db
}

func newEnv(t *testing.T, cfg httpapi.Config) *env {
	t.Helper()
	srv, db := newServer(t, cfg)
	e := &env{t: t, db: db, tenants: tenants.NewStore(db), claims: claims.New(db), srv: srv}
	e.ts = httptest.NewServer(srv.Handler())
	t.Cleanup(e.ts.Close)
	return e
}

// tenant creates a tenant and returns a token of it.
func (e *env) tenant(name string) string {
	e.t.Helper()
	ctx := context.Background()
	if _, err := e.tenants.CreateTenant(ctx, name); err != nil {
		e.t.Fatal(err)
	}
	_, tok, err := e.tenants.CreateToken(ctx, name, "test", 0)
	if err != nil {
		e.t.Fatal(err)
	}
	return tok
}

// resp is an answer as received.
type resp struct {
	status int
	header http.Header
	body   []byte
}

// replayed reports whether the answer was replayed from a stored one.
func (r resp) replayed() bool { return r.header.Get(httpapi.ReplayedHeader) == "true" }

// do sends a request; hdr are header name/value pairs (a name may repeat).
// Safe from several goroutines: a failure is reported with Errorf and an
// answer of status 0.
func (e *env) do(method, path, token, body string, hdr ...string) resp {
	req, err := http.NewRequest(method, e.ts.URL+path, strings.NewReader(body))
	if err != nil {
		e.t.Errorf("%s %s: %v", method, path, err)
		return resp{}
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Content-Type" {
			req.Header.Del(hdr[i])
		}
		req.Header.Add(hdr[i], hdr[i+1])
	}
	res, err := e.ts.Client().Do(req)
	if err != nil {
		e.t.Errorf("%s %s: %v", method, path, err)
		return resp{}
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Errorf("%s %s: reading the body: %v", method, path, err)
	}
	return resp{status: res.StatusCode, header: res.Header, body: b}
}

// post sends a POST with an Idempotency-Key (none when key is "").
func (e *env) post(path, token, key, body string) resp {
	if key == "" {
		return e.do(http.MethodPost, path, token, body)
	}
	return e.do(http.MethodPost, path, token, body, httpapi.KeyHeader, key)
}

// task decodes a task answer with the wanted status.
func (e *env) task(r resp, status int) httpapi.Task {
	e.t.Helper()
	e.uncached(r)
	if r.status != status {
		e.t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	var v httpapi.Task
	if err := json.Unmarshal(r.body, &v); err != nil {
		e.t.Fatalf("not a task: %v: %s", err, r.body)
	}
	return v
}

// uncached checks that r forbids caches to keep it and browsers to
// sniff it: a tenant's data, as of now.
func (e *env) uncached(r resp) {
	e.t.Helper()
	if cc, xc := r.header.Get("Cache-Control"), r.header.Get("X-Content-Type-Options"); cc != "no-store" || xc != "nosniff" {
		e.t.Errorf("Cache-Control %q, X-Content-Type-Options %q; want no-store, nosniff", cc, xc)
	}
}

// problem checks that r is a problem with status and code and returns it.
func (e *env) problem(r resp, status int, code string) httpapi.Problem {
	e.t.Helper()
	e.uncached(r)
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		e.t.Errorf("Content-Type %q, want application/problem+json: %s", ct, r.body)
	}
	var p httpapi.Problem
	if err := json.Unmarshal(r.body, &p); err != nil {
		e.t.Fatalf("not a problem: %v: %s", err, r.body)
	}
	if r.status != status || p.Status != status || p.Code != code || p.Type != httpapi.ProblemType+code || p.Title == "" {
		e.t.Errorf("answer %d %+v, want %d %s", r.status, p, status, code)
	}
	return p
}

// count runs a count(*) query.
func (e *env) count(sql string, args ...any) int {
	e.t.Helper()
	var n int
	if err := e.db.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// enqueue makes a task directly.
func (e *env) enqueue(p claims.EnqueueParams) int64 {
	e.t.Helper()
	if p.Kind == "" {
		p.Kind = "echo"
	}
	res, err := e.claims.Enqueue(context.Background(), p)
	if err != nil {
		e.t.Fatal(err)
	}
	return res.Task.ID
}
