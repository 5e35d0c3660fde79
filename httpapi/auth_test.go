package httpapi_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/httpapi"
)

// Every failed authentication gets the same answer, whatever failed (the
// reason is in the log); an address that failed too often is refused,
// a valid token too, with Retry-After, before any look-up.
func TestFailedAuthenticationIsUniformAndLimited(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpapi.Config{})
	tok := e.tenant("acme")
	details := map[string]bool{}
	for _, hdr := range [][]string{
		nil,
		{"Authorization", "Basic YWxhZGRpbjpvcGVuc2VzYW1l"},
		{"Authorization", "Bearer hunter2"},
		{"Authorization", "Bearer alt_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"},
	} {
		p := e.problem(e.do(http.MethodGet, "/v1/tasks", "", "", hdr...), http.StatusUnauthorized, "unauthorized")
		details[p.Detail] = true
	}
	if len(details) != 1 {
		t.Errorf("the 401s differ: %v", details)
	}
	for range 16 { // 4 above: 20 failures in all
		e.do(http.MethodGet, "/v1/tasks", "", "", "Authorization", "Bearer hunter2")
	}
	r := e.do(http.MethodGet, "/v1/tasks", tok, "")
	p := e.problem(r, http.StatusUnauthorized, "unauthorized")
	if r.header.Get("Retry-After") == "" || !strings.Contains(p.Detail, "too many failed authentications") {
		t.Errorf("over the budget: %s, Retry-After %q", p.Detail, r.header.Get("Retry-After"))
	}
}

// from answers GET /v1/tasks as if it came from peer (host:port) with
// token and, unless xff is "", that X-Forwarded-For.
func (e *env) from(peer, xff, token string) resp {
	req := httptest.NewRequest(http.MethodGet, "/v1/tasks", nil)
	req.RemoteAddr = peer
	req.Header.Set("Authorization", "Bearer "+token)
	if xff != "" {
		req.Header.Set("X-Forwarded-For", xff)
	}
	rec := httptest.NewRecorder()
	e.srv.Handler().ServeHTTP(rec, req)
	return resp{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
}

// refused checks that r is the answer to an address over its failure
// budget.
func (e *env) refused(r resp, who string) {
	e.t.Helper()
	p := e.problem(r, http.StatusUnauthorized, "unauthorized")
	if r.header.Get("Retry-After") == "" || !strings.Contains(p.Detail, "too many failed authentications") {
		e.t.Errorf("%s: %s, Retry-After %q; want refused", who, p.Detail, r.header.Get("Retry-After"))
	}
}

func trusted(prefixes ...string) []netip.Prefix {
	ps, err := httpapi.ParseTrustedProxies(prefixes)
	if err != nil {
		panic(err)
	}
	return ps
}

const proxy = "10.0.0.5:44321"

// Behind a trusted proxy one client's bad tokens refuse that client only:
// another client's token behind the same proxy still works, and the first
// cannot reset its count by writing addresses of its own into the header.
func TestFailureLimitBehindTrustedProxyIsPerClient(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpapi.Config{TrustedProxies: trusted("10.0.0.0/8")})
	tok := e.tenant("acme")
	for i := range 25 { // the client writes a new address before its own each time
		r := e.from(proxy, fmt.Sprintf("203.0.113.%d, 198.51.100.1, 10.0.0.9", i), "alt_bad")
		if r.status != http.StatusUnauthorized {
			t.Fatalf("bad token %d: %d", i, r.status)
		}
	}
	e.refused(e.from(proxy, "198.51.100.1, 10.0.0.9", tok), "client A with a good token")
	if r := e.from(proxy, "198.51.100.2", tok); r.status != http.StatusOK {
		t.Errorf("client B behind the same proxy: %d %s, want 200", r.status, r.body)
	}
	if r := e.from(proxy, "", tok); r.status != http.StatusOK {
		t.Errorf("the proxy itself: %d %s, want 200", r.status, r.body)
	}
}

// With no trusted proxy, X-Forwarded-For is ignored: varying it does not
// give a client a fresh budget.
func TestFailureLimitIgnoresForwardedForWithoutTrustedProxies(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpapi.Config{})
	tok := e.tenant("acme")
	for i := range 25 {
		e.from("192.0.2.7:5000", fmt.Sprintf("198.51.100.%d", i), "alt_bad")
	}
	e.refused(e.from("192.0.2.7:5000", "198.51.100.200", tok), "a new X-Forwarded-For")
}

// A peer that is not a trusted proxy is counted as itself whatever its
// X-Forwarded-For says: it cannot lock out the client it names.
func TestForgedForwardedForFromUntrustedPeer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpapi.Config{TrustedProxies: trusted("10.0.0.0/8")})
	tok := e.tenant("acme")
	for range 25 {
		e.from("192.0.2.7:5000", "198.51.100.2", "alt_bad")
	}
	e.refused(e.from("192.0.2.7:5000", "", tok), "the untrusted peer")
	if r := e.from(proxy, "198.51.100.2", tok); r.status != http.StatusOK {
		t.Errorf("the client the forged header named, through the proxy: %d %s, want 200", r.status, r.body)
	}
}

// A failed authentication is logged under the client address, with the
// trusted proxy it came through, never with the token.
func TestFailedAuthenticationLogsTheClient(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	e := newEnv(t, httpapi.Config{TrustedProxies: trusted("10.0.0.0/8"), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	e.from(proxy, "198.51.100.1", "alt_s3cr3t")
	if l := logs.String(); !strings.Contains(l, "client=198.51.100.1") || !strings.Contains(l, "via=10.0.0.5") || strings.Contains(l, "s3cr3t") {
		t.Errorf("log: %s", l)
	}
}
