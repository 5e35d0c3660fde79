package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger/httpapi"
	"github.com/agentledger/agentledger/tenants"
)

// served is a Server running Serve on a loopback listener.
type served struct {
	base   string
	cancel context.CancelFunc
	done   chan error
	client *http.Client
}

func serve(t *testing.T, srv *httpapi.Server) *served {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &served{base: "http://" + ln.Addr().String(), cancel: cancel, done: make(chan error, 1),
		client: &http.Client{Transport: &http.Transport{}}}
	go func() { s.done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		<-s.done
		s.client.CloseIdleConnections()
	})
	return s
}

// answer is what a request in the background got.
type answer struct {
	status int
	body   string
	err    error
}

func (s *served) send(req *http.Request) <-chan answer {
	ch := make(chan answer, 1)
	go func() {
		res, err := s.client.Do(req)
		if err != nil {
			ch <- answer{err: err}
			return
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		ch <- answer{status: res.StatusCode, body: string(b), err: err}
	}()
	return ch
}

// blockTasks locks the tasks table until the returned function is called:
// an enqueue waits meanwhile. It returns once the lock is held.
func blockTasks(t *testing.T, db *pgxpool.Pool) (release func()) {
	t.Helper()
	ctx := context.Background()
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE tasks IN SHARE ROW EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	var once bool
	release = func() {
		if !once {
			once = true
			_ = tx.Rollback(ctx)
		}
	}
	t.Cleanup(release)
	return release
}

// waitForLockWait returns once a statement of the database waits for a lock.
func waitForLockWait(t *testing.T, db *pgxpool.Pool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var n int
		if err := db.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no request came to wait for the lock")
}

func tokenFor(t *testing.T, db *pgxpool.Pool) string {
	t.Helper()
	ts := tenants.NewStore(db)
	if _, err := ts.CreateTenant(context.Background(), "acme"); err != nil {
		t.Fatal(err)
	}
	_, tok, err := ts.CreateToken(context.Background(), "acme", "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func postTask(t *testing.T, base, tok, key string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/v1/tasks", strings.NewReader(`{"kind":"echo"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set(httpapi.KeyHeader, key)
	return req
}

// TestServeDrains: when Serve's context ends, it stops accepting, lets the
// request in flight finish and answer, and returns nil.
func TestServeDrains(t *testing.T) {
	t.Parallel()
	srv, db := newServer(t, httpapi.Config{ShutdownTimeout: time.Minute})
	tok := tokenFor(t, db)
	s := serve(t, srv)

	release := blockTasks(t, db)
	inflight := s.send(postTask(t, s.base, tok, "k"))
	waitForLockWait(t, db)
	s.cancel()

	// Serve waits for the request; the listener is closed meanwhile.
	addr := strings.TrimPrefix(s.base, "http://")
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("the listener still accepts after shutdown began")
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case err := <-s.done:
		t.Fatalf("Serve returned while a request was in flight: %v", err)
	case <-time.After(100 * time.Millisecond):
	}

	release()
	a := <-inflight
	if a.err != nil || a.status != http.StatusCreated {
		t.Fatalf("the request in flight got %d %s %v, want 201", a.status, a.body, a.err)
	}
	if err := <-s.done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	s.done <- nil // for the cleanup
	var n int
	if err := db.QueryRow(context.Background(), `SELECT count(*) FROM idempotency_keys WHERE state = 'completed'`).Scan(&n); err != nil || n != 1 {
		t.Errorf("%d completed records (%v), want 1", n, err)
	}
}

// TestServeCutsOff: a request still running after ShutdownTimeout is cut
// off and Serve says so.
func TestServeCutsOff(t *testing.T) {
	t.Parallel()
	srv, db := newServer(t, httpapi.Config{ShutdownTimeout: 200 * time.Millisecond})
	tok := tokenFor(t, db)
	s := serve(t, srv)

	release := blockTasks(t, db)
	inflight := s.send(postTask(t, s.base, tok, "k"))
	waitForLockWait(t, db)
	start := time.Now()
	s.cancel()
	err := <-s.done
	s.done <- nil // for the cleanup
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Serve = %v, want a cut-off error", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Serve took %s to give up", d)
	}
	if a := <-inflight; a.err == nil {
		t.Errorf("the cut-off request got %d %s", a.status, a.body)
	}
	release()
}

// TestEarlyBadRequestIsAProblem: a request net/http refuses before routing
// it — an Idempotency-Key holding a control character, no Host, a request
// line it cannot read — is answered with a problem, as every other refusal
// is, not with net/http's plain text; and the connection's other answers
// are untouched.
func TestEarlyBadRequestIsAProblem(t *testing.T) {
	t.Parallel()
	srv, db := newServer(t, httpapi.Config{})
	tok := tokenFor(t, db)
	s := serve(t, srv)
	addr := strings.TrimPrefix(s.base, "http://")
	body := `{"kind":"echo"}`
	post := func(key string) string {
		return "POST /v1/tasks HTTP/1.1\r\nHost: " + addr + "\r\nAuthorization: Bearer " + tok +
			"\r\nContent-Type: application/json\r\nIdempotency-Key: " + key +
			"\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	}
	for _, c := range []struct{ name, request, detail string }{
		{"control character in Idempotency-Key", post("order\x01-8"), "control character"},
		{"DEL in Idempotency-Key", post("order\x7f-8"), "control character"},
		{"no Host", "GET /v1/tasks HTTP/1.1\r\nAuthorization: Bearer " + tok + "\r\n\r\n", "Host header is missing"},
		{"unreadable request line", "GET\r\n\r\n", "not valid HTTP/1.1"},
		{"headers too large", "GET /v1/tasks HTTP/1.1\r\nHost: " + addr + "\r\nX-Big: " + strings.Repeat("x", 2*httpapi.DefaultMaxHeaderBytes) + "\r\n\r\n",
			"headers are too large"},
	} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(conn, c.request); err != nil {
			t.Fatal(err)
		}
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		b, err := io.ReadAll(res.Body)
		conn.Close()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var p httpapi.Problem
		if ct := res.Header.Get("Content-Type"); ct != "application/problem+json" || json.Unmarshal(b, &p) != nil {
			t.Errorf("%s: %d %s %q, want a problem", c.name, res.StatusCode, ct, b)
			continue
		}
		status, code := http.StatusBadRequest, "malformed_request"
		if c.name == "headers too large" {
			status, code = http.StatusRequestHeaderFieldsTooLarge, "headers_too_large"
		}
		if res.StatusCode != status || p.Status != status || p.Code != code ||
			p.Type != httpapi.ProblemType+code || !strings.Contains(p.Detail, c.detail) {
			t.Errorf("%s: %d %+v, want %d %s saying %q", c.name, res.StatusCode, p, status, code, c.detail)
		}
		if res.ContentLength != int64(len(b)) {
			t.Errorf("%s: Content-Length %d for %d bytes", c.name, res.ContentLength, len(b))
		}
	}
	// A handler's own 400 comes through as it was written; the same key
	// without the control character is accepted.
	res, err := s.client.Do(postTask(t, s.base, tok, "clé"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(b), `"code":"idempotency_key_invalid"`) {
		t.Errorf("a non-ASCII key: %d %s, want idempotency_key_invalid", res.StatusCode, b)
	}
	res, err = s.client.Do(postTask(t, s.base, tok, "order-8"))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("status %d, want 201", res.StatusCode)
	}
	var n int
	if err := db.QueryRow(context.Background(), `SELECT count(*) FROM tasks`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d tasks (%v), want the one accepted", n, err)
	}
}
