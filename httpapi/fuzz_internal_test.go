package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agentledger/agentledger/admit"
)

// fuzzMaxBody is small, so that the fuzzer meets the body limit too.
const fuzzMaxBody = 512

// FuzzCreateTaskRequest runs any Idempotency-Key, Content-Type and body of
// POST /v1/tasks through the checks that run before a key record is written
// (Server.check with createTask), with no database: that needs no Claims,
// and a door that reads nothing. It never panics; a refusal is a 4xx
// problem, never a 5xx; the same key and body get the same answer every
// time, and so does the same body re-encoded (keys reordered, whitespace
// changed), under the same fingerprint.
func FuzzCreateTaskRequest(f *testing.F) {
	for _, body := range []string{
		``, `"echo"`, `[]`, `{"kind":`, `{"kind":"a","kind":"b"}`, `{"kind":"echo","max_attempts":0}`,
		`{"kind":"echo","payload":{"a":"x\u0000"}}`, `{"kind":"echo","payload":{"n":2}}`,
		`{"kind":"echo","priority":0,"run_at":"2001-01-01T00:00:00Z"}`, `{"kind":"echo","priority":500}`,
		`{"kind":"echo","queue":"mail"}`, `{"kind":"echo","tenant":"acme","run_at":"2030-01-02T03:04:05Z"}`,
		`{"kind":"echo","tenant":"globex"}`, `{"kind":"echo"}`, `{"kind":"eco","allow_unserved":true}`,
		`{"kind":"report","queue":"reports","payload":{"month":"2025-01"},"priority":3,"max_attempts":4}`,
		`{"kind":"steps","payload":{"steps":[]}}`, `{"queue":"q"}`, `{"kind":"echo","run_at":"soon"}`,
		`{"kind":"echo","payload":{"a":"\ud800"}}`, `{"kind":"echo","payload":{"a":1e1000000}}`,
		`{"kind":"echo","unknown":1}`, `{"kind":5}`, `{"kind":"echo"} {}`,
	} {
		f.Add("k", "application/json", []byte(body))
	}
	for _, key := range []string{"", "   ", "a, b", "a\tb", "clé", `""`, `"`, `"a", "b"`, `"a\"b"`, `"x" `, "a\x7fb"} {
		f.Add(key, "application/json", []byte(`{"kind":"echo"}`))
	}
	f.Add("k", "text/plain", []byte(`{"kind":"echo"}`))
	f.Add("k", "application/merge-patch+json; charset=utf-8", []byte(`{"kind":"echo"}`))
	f.Add("k", "", []byte(`{"kind":"echo"}`))
	// A door that reads nothing: every kind typed here with nothing to
	// check, queued whether served or not.
	door := &admit.Door{Unserved: true, Typed: func(string, string, json.RawMessage) (bool, error) { return true, nil }}
	s := &Server{cfg: Config{MaxBody: fuzzMaxBody, Door: door}, log: slog.New(slog.DiscardHandler)}
	f.Fuzz(func(t *testing.T, key, contentType string, body []byte) {
		first := fuzzCheck(t, s, key, contentType, body)
		if again := fuzzCheck(t, s, key, contentType, body); !first.same(again) {
			t.Fatalf("key %q, body %q: answered %+v, then %+v", key, body, first, again)
		}
		// The same body re-encoded through map[string]any: its fingerprint
		// is the same, and so is the answer.
		if first.err != nil || len(bytes.TrimSpace(body)) == 0 {
			return
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("accepted body %q does not decode: %v", body, err)
		}
		other, err := json.MarshalIndent(v, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		if len(other) > fuzzMaxBody {
			return
		}
		if o := fuzzCheck(t, s, key, contentType, other); !first.same(o) {
			t.Fatalf("body %q answered %+v, the same body as %q %+v", body, first, other, o)
		}
	})
}

// fuzzOutcome is what the checks made of a request.
type fuzzOutcome struct {
	req    keyRequest
	status int    // of the refusal; 0 when accepted
	code   string // of the refusal
	err    error
}

func (o fuzzOutcome) same(p fuzzOutcome) bool {
	return o.req.key == p.req.key && bytes.Equal(o.req.fingerprint, p.req.fingerprint) &&
		o.status == p.status && o.code == p.code
}

// fuzzCheck runs one request through s.check and checks its answer's form.
func fuzzCheck(t *testing.T, s *Server, key, contentType string, body []byte) fuzzOutcome {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/v1/tasks", bytes.NewReader(body))
	r.Header[KeyHeader] = []string{key} // as sent: net/http would refuse some before the handler
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	r.Body = http.MaxBytesReader(httptest.NewRecorder(), r.Body, s.cfg.MaxBody)
	req, act, err := s.check(r, "acme", OpCreateTask, s.createTask)
	if err == nil {
		if act == nil {
			t.Fatalf("key %q, body %q: accepted without an action", key, body)
		}
		if req.key == "" || req.tenant != "acme" || req.operation != OpCreateTask || len(req.fingerprint) != 32 {
			t.Fatalf("key %q, body %q: accepted as %+v", key, body, req)
		}
		return fuzzOutcome{req: req}
	}
	rec := httptest.NewRecorder()
	s.fail(rec, r, err)
	res := rec.Result()
	raw, _ := io.ReadAll(res.Body)
	var p Problem
	switch {
	case res.StatusCode < 400 || res.StatusCode > 499:
		t.Fatalf("key %q, Content-Type %q, body %q: %d, want a 4xx: %v", key, contentType, body, res.StatusCode, err)
	case res.Header.Get("Content-Type") != "application/problem+json":
		t.Fatalf("key %q, body %q: Content-Type %q", key, body, res.Header.Get("Content-Type"))
	case json.Unmarshal(raw, &p) != nil:
		t.Fatalf("key %q, body %q: not a problem: %s", key, body, raw)
	case p.Status != res.StatusCode || p.Code == "" || p.Title == "" || p.Detail == "" || p.Type != ProblemType+p.Code:
		t.Fatalf("key %q, body %q: problem %+v with status %d", key, body, p, res.StatusCode)
	}
	return fuzzOutcome{status: p.Status, code: p.Code, err: err}
}
