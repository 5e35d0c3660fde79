package httpapi_test

import (
	"net/http"
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
