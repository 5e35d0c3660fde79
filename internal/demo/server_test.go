package demo_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/internal/demo"
)

// call posts body to path with an Idempotency-Key (none when key is
// empty) and returns the status and body.
func call(t *testing.T, base, method, path, key, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

func newAPI(t *testing.T) string {
	mux := http.NewServeMux()
	for pattern, h := range demo.NewServer().Routes() {
		mux.Handle(pattern, h)
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		srv.Close()
		http.DefaultClient.CloseIdleConnections()
	})
	return srv.URL
}

// A refund and a release happen once per charge or reservation: a retry
// under the same key is answered the same, another key is refused, and
// the counts show what was done.
func TestRefundsAndReleasesHappenOnce(t *testing.T) {
	t.Parallel()
	base := newAPI(t)
	steps := []struct {
		method, path, key, body string
		status                  int
		want                    string
	}{
		{"POST", "/demo/charges", "c1", `{"order":1,"amount":700}`, 201, `"id":"ch_1"`},
		{"POST", "/demo/charges/ch_1/refund", "", ``, 400, `Idempotency-Key required`},
		{"POST", "/demo/charges/ch_9/refund", "r0", ``, 404, `no charge ch_9`},
		{"POST", "/demo/charges/ch_1/refund", "r1", `{"reason":"not shipped"}`, 201, `{"amount":700,"charge":"ch_1","id":"re_1","reason":"not shipped","status":"succeeded"}`},
		{"POST", "/demo/charges/ch_1/refund", "r1", `{"reason":"not shipped"}`, 201, `"id":"re_1"`},
		{"POST", "/demo/charges/ch_1/refund", "r2", ``, 409, `charge ch_1 is already refunded (re_1)`},
		{"GET", "/demo/charges", "", ``, 200, `{"charges":1,"refunds":1,"requests":5}`},
		{"POST", "/demo/reservations", "s1", `{"order":1,"sku":"kettle"}`, 400, `qty of at least 1`},
		{"POST", "/demo/reservations", "s1", `{"order":1,"sku":"kettle","qty":1}`, 201, `"id":"rs_1"`},
		{"POST", "/demo/reservations/rs_1/release", "l1", ``, 200, `{"id":"rs_1","status":"released"}`},
		{"POST", "/demo/reservations/rs_1/release", "l1", ``, 200, `"status":"released"`},
		{"POST", "/demo/reservations/rs_1/release", "l2", ``, 409, `reservation rs_1 is already released`},
		{"POST", "/demo/reservations/rs_7/release", "l3", ``, 404, `no reservation rs_7`},
		{"GET", "/demo/reservations", "", ``, 200, `{"releases":1,"requests":5,"reservations":1}`},
		{"POST", "/demo/shipments", "p1", `{"order":1}`, 422, `no courier delivers order 1`},
	}
	for _, s := range steps {
		status, body := call(t, base, s.method, s.path, s.key, s.body)
		if status != s.status || !strings.Contains(body, s.want) {
			t.Errorf("%s %s (key %q): %d %s, want %d with %s", s.method, s.path, s.key, status, body, s.status, s.want)
		}
	}
}
