package httpapi_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/httpapi"
)

const echoBody = `{"kind":"echo","queue":"default","payload":{"n":1,"tags":["a","b"]},"priority":5}`

// TestConcurrentSameKey: 50 requests at once with one key and one body
// make one task; each is answered by the original 201, a 409 in flight, or
// a byte-identical replay of the 201.
func TestConcurrentSameKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpapi.Config{})
	tok := e.tenant("acme")

	// Each client retries its 409s (sooner than Retry-After says, to keep
	// the test short) until it has a 201.
	const n = 50
	var mu sync.Mutex
	var answers []resp
	start := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			<-start
			for range 500 {
				a := e.post("/v1/tasks", tok, "order-1", echoBody)
				mu.Lock()
				answers = append(answers, a)
				mu.Unlock()
				if a.status != http.StatusConflict {
					return
				}
				time.Sleep(2 * time.Millisecond)
			}
		})
	}
	close(start)
	wg.Wait()

	var originals, replays, inFlight []resp
	for _, a := range answers {
		switch {
		case a.status == http.StatusCreated && !a.replayed():
			originals = append(originals, a)
		case a.status == http.StatusCreated:
			replays = append(replays, a)
		case a.status == http.StatusConflict:
			e.problem(a, http.StatusConflict, "idempotency_key_in_flight")
			if a.header.Get("Retry-After") != "1" {
				t.Errorf("409 with Retry-After %q", a.header.Get("Retry-After"))
			}
			inFlight = append(inFlight, a)
		default:
			t.Errorf("unexpected answer %d: %s", a.status, a.body)
		}
	}
	if len(originals) != 1 {
		t.Fatalf("%d original answers, want 1", len(originals))
	}
	orig := originals[0]
	for _, r := range replays {
		if !bytes.Equal(r.body, orig.body) || r.header.Get("Location") != orig.header.Get("Location") ||
			r.header.Get("Content-Type") != orig.header.Get("Content-Type") {
			t.Errorf("replay differs:\n%s %v\n%s %v", r.body, r.header, orig.body, orig.header)
		}
	}
	t.Logf("1 original, %d replays, %d in flight", len(replays), len(inFlight))
	if len(originals)+len(replays) != n {
		t.Errorf("%d clients got their 201, want %d", len(originals)+len(replays), n)
	}
	if got := e.count(`SELECT count(*) FROM tasks`); got != 1 {
		t.Errorf("%d tasks, want 1", got)
	}

	// Later, the same request is a replay, byte for byte.
	again := e.post("/v1/tasks", tok, "order-1", echoBody)
	if again.status != http.StatusCreated || !again.replayed() || !bytes.Equal(again.body, orig.body) {
		t.Errorf("retry: %d replayed=%v %s", again.status, again.replayed(), again.body)
	}
	task := e.task(orig, http.StatusCreated)
	if loc := orig.header.Get("Location"); loc != fmt.Sprintf("/v1/tasks/%d", task.ID) {
		t.Errorf("Location %q", loc)
	}
}

// TestKeyReuse: the same key with another body, path or method is 422 and
// changes nothing; the same JSON written differently is a replay.
func TestKeyReuse(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpapi.Config{})
	tok := e.tenant("acme")
	first := e.post("/v1/tasks", tok, "k", echoBody)
	task := e.task(first, http.StatusCreated)

	e.problem(e.post("/v1/tasks", tok, "k", `{"kind":"echo","payload":{"n":2}}`), http.StatusUnprocessableEntity, "idempotency_key_reused")
	// Key order, whitespace and number spelling as written are the
	// canonical JSON's business: this is the same request.
	same := "{ \"priority\" : 5,\n \"payload\": {\"tags\": [\"a\", \"b\"], \"n\": 1}, \"queue\": \"default\", \"kind\": \"echo\" }"
	r := e.post("/v1/tasks", tok, "k", same)
	if r.status != http.StatusCreated || !r.replayed() || !bytes.Equal(r.body, first.body) {
		t.Errorf("same request, other spelling: %d replayed=%v %s", r.status, r.replayed(), r.body)
	}
	// Another operation has its own keys: cancelling under "k" is new.
	c := e.post(fmt.Sprintf("/v1/tasks/%d/cancel", task.ID), tok, "k", "")
	if c.status != http.StatusOK || c.replayed() {
		t.Errorf("cancel under a key used for a create: %d %s", c.status, c.body)
	}
	// The same key on another task's path is another request.
	other := e.enqueue(claims.EnqueueParams{Tenant: "acme"})
	e.problem(e.post(fmt.Sprintf("/v1/tasks/%d/cancel", other), tok, "k", ""), http.StatusUnprocessableEntity, "idempotency_key_reused")
	if got := e.count(`SELECT count(*) FROM tasks WHERE state = 'cancelled'`); got != 1 {
		t.Errorf("%d cancelled tasks, want 1", got)
	}
	if got := e.count(`SELECT count(*) FROM tasks`); got != 2 {
		t.Errorf("%d tasks, want 2", got)
	}
}

// TestTwoTenantsOneKey: keys are scoped by tenant.
func TestTwoTenantsOneKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpapi.Config{})
	a, b := e.tenant("acme"), e.tenant("globex")
	ta := e.task(e.post("/v1/tasks", a, "same", echoBody), http.StatusCreated)
	rb := e.post("/v1/tasks", b, "same", echoBody)
	tb := e.task(rb, http.StatusCreated)
	if rb.replayed() || ta.ID == tb.ID || ta.Tenant != "acme" || tb.Tenant != "globex" {
		t.Errorf("two tenants, one key: %+v / %+v (replayed %v)", ta, tb, rb.replayed())
	}
	if got := e.count(`SELECT count(*) FROM tasks`); got != 2 {
		t.Errorf("%d tasks, want 2", got)
	}
}

// TestBadKeys: a missing, empty, too long, non-printable, repeated or
// listed key is 400 and stores nothing; quoted keys are unquoted.
func TestBadKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpapi.Config{})
	tok := e.tenant("acme")
	for _, c := range []struct {
		name string
		hdr  []string
		code string
	}{
		{"missing", nil, "idempotency_key_missing"},
		{"empty", []string{httpapi.KeyHeader, ""}, "idempotency_key_invalid"},
		{"blank", []string{httpapi.KeyHeader, "   "}, "idempotency_key_invalid"},
		{"empty quoted", []string{httpapi.KeyHeader, `""`}, "idempotency_key_invalid"},
		{"256 characters", []string{httpapi.KeyHeader, strings.Repeat("k", 256)}, "idempotency_key_invalid"},
		{"256 quoted", []string{httpapi.KeyHeader, `"` + strings.Repeat("k", 256) + `"`}, "idempotency_key_invalid"},
		{"not ASCII", []string{httpapi.KeyHeader, "clé"}, "idempotency_key_invalid"},
		{"tab", []string{httpapi.KeyHeader, "a\tb"}, "idempotency_key_invalid"},
		{"unclosed quote", []string{httpapi.KeyHeader, `"abc`}, "idempotency_key_invalid"},
		{"bad escape", []string{httpapi.KeyHeader, `"a\nb"`}, "idempotency_key_invalid"},
		{"parameters", []string{httpapi.KeyHeader, `"abc";x=1`}, "idempotency_key_invalid"},
		{"twice", []string{httpapi.KeyHeader, "a", httpapi.KeyHeader, "a"}, "idempotency_key_duplicated"},
		{"list", []string{httpapi.KeyHeader, "a, b"}, "idempotency_key_duplicated"},
		{"quoted list", []string{httpapi.KeyHeader, `"a", "b"`}, "idempotency_key_duplicated"},
	} {
		r := e.do(http.MethodPost, "/v1/tasks", tok, echoBody, c.hdr...)
		p := e.problem(r, http.StatusBadRequest, c.code)
		if strings.Contains(p.Detail, "kkkk") {
			t.Errorf("%s: the detail echoes the key: %s", c.name, p.Detail)
		}
	}
	if got := e.count(`SELECT count(*) FROM idempotency_keys`); got != 0 {
		t.Errorf("%d idempotency records after bad keys, want 0", got)
	}
	if got := e.count(`SELECT count(*) FROM tasks`); got != 0 {
		t.Errorf("%d tasks after bad keys, want 0", got)
	}

	// Good keys: 255 characters; quoted with escapes; spaces inside.
	for _, c := range []struct{ header, key string }{
		{strings.Repeat("k", 255), strings.Repeat("k", 255)},
		{`"a \"quoted\" \\ key, with a comma"`, `a "quoted" \ key, with a comma`},
		{"  order 42  ", "order 42"},
		{`~!#$%&'()*+-./:;<=>?@[]^_{|}`, `~!#$%&'()*+-./:;<=>?@[]^_{|}`},
	} {
		r := e.do(http.MethodPost, "/v1/tasks", tok, echoBody, httpapi.KeyHeader, c.header)
		e.task(r, http.StatusCreated)
		if got := e.count(`SELECT count(*) FROM idempotency_keys WHERE key = $1 AND state = 'completed'`, c.key); got != 1 {
			t.Errorf("header %q: no completed record for key %q", c.header, c.key)
		}
	}
	// The 255-character key's submission key is hashed to fit.
	if got := e.count(`SELECT count(*) FROM tasks WHERE submission_key LIKE 'api-sha256:%'`); got != 1 {
		t.Errorf("%d hashed submission keys, want 1", got)
	}
	if got := e.count(`SELECT count(*) FROM tasks WHERE submission_key LIKE 'api:%:order 42'`); got != 1 {
		t.Errorf("%d tasks with submission key api:…:order 42, want 1", got)
	}
}

// TestValidationStoresNothing: refusals before the action (token, body,
// fields) keep no record, so the key stays free for the corrected request.
func TestValidationStoresNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpapi.Config{MaxBody: 256})
	tok := e.tenant("acme")
	e.problem(e.post("/v1/tasks", "alt_wrong", "k", echoBody), http.StatusUnauthorized, "unauthorized")
	e.problem(e.post("/v1/tasks", tok, "k", `{"kind":`), http.StatusBadRequest, "malformed_request")
	e.problem(e.post("/v1/tasks", tok, "k", `{"kind":"a","kind":"b"}`), http.StatusBadRequest, "malformed_request")
	e.problem(e.post("/v1/tasks", tok, "k", ``), http.StatusBadRequest, "malformed_request")
	e.problem(e.post("/v1/tasks", tok, "k", `[]`), http.StatusBadRequest, "malformed_request")
	e.problem(e.post("/v1/tasks", tok, "k", `"echo"`), http.StatusBadRequest, "malformed_request")
	// One rule: a field of a JSON object that is refused, for whatever
	// reason, is 422 naming it.
	for _, c := range []struct{ body, field string }{
		{`{"kind":"echo","colour":"red"}`, "colour"},
		{`{"kind":"echo","priority":"high"}`, "priority"},
		{`{"kind":"echo","priority":1.5}`, "priority"},
		{`{"kind":"echo","max_attempts":"3"}`, "max_attempts"},
		{`{"kind":"echo","run_at":"tomorrow"}`, "run_at"},
		{`{"kind":"echo","run_at":1767225600}`, "run_at"},
		{`{"kind":7}`, "kind"},
		{`{"kind":"echo","payload":"` + "\xff" + `"}`, "payload"},
	} {
		if p := e.problem(e.post("/v1/tasks", tok, "k", c.body), http.StatusUnprocessableEntity, "invalid_request"); p.Field != c.field {
			t.Errorf("%s: field %q, want %s", c.body, p.Field, c.field)
		}
	}
	if p := e.problem(e.post("/v1/tasks", tok, "k", `{"queue":"q"}`), http.StatusUnprocessableEntity, "invalid_request"); p.Field != "kind" {
		t.Errorf("field %q, want kind", p.Field)
	}
	if p := e.problem(e.post("/v1/tasks", tok, "k", `{"kind":"echo","priority":500}`), http.StatusUnprocessableEntity, "invalid_request"); p.Field != "priority" {
		t.Errorf("field %q, want priority", p.Field)
	}
	// A number that is out of range, or no integer, is quoted as sent.
	for body, detail := range map[string]string{
		`{"kind":"echo","priority":100000}`:          "priority: 100000 is outside 0..100 (lower runs first)",
		`{"kind":"echo","priority":-65535}`:          "priority: -65535 is outside 0..100 (lower runs first)",
		`{"kind":"echo","priority":1e2}`:             "priority: must be an integer in 0..100, not 1e2",
		`{"kind":"echo","max_attempts":99999999999}`: "max_attempts: must be an integer in 1..1000, not 99999999999",
		`{"kind":"echo","max_attempts":10.0}`:        "max_attempts: must be an integer in 1..1000, not 10.0",
	} {
		if p := e.problem(e.post("/v1/tasks", tok, "k", body), http.StatusUnprocessableEntity, "invalid_request"); p.Detail != detail {
			t.Errorf("%s: %q, want %q", body, p.Detail, detail)
		}
	}
	e.problem(e.post("/v1/tasks", tok, "k", `{"kind":"echo","payload":"`+strings.Repeat("x", 300)+`"}`), http.StatusRequestEntityTooLarge, "body_too_large")
	e.problem(e.do(http.MethodPost, "/v1/tasks", tok, "kind=echo", "Content-Type", "text/plain", httpapi.KeyHeader, "k"), http.StatusUnsupportedMediaType, "unsupported_media_type")
	e.problem(e.do(http.MethodPost, "/v1/tasks", tok, echoBody, "Content-Type", "application/json; charset=iso-8859-1", httpapi.KeyHeader, "k"),
		http.StatusUnsupportedMediaType, "unsupported_media_type")
	e.problem(e.post("/v1/tasks/abc/cancel", tok, "k", ""), http.StatusNotFound, "not_found")
	if p := e.problem(e.post("/v1/tasks/1/cancel", tok, "k", `{"now":true}`), http.StatusUnprocessableEntity, "invalid_request"); p.Field != "now" {
		t.Errorf("field %q, want now", p.Field)
	}
	e.problem(e.post("/v1/tasks/1/cancel", tok, "k", `[]`), http.StatusBadRequest, "malformed_request")
	if p := e.problem(e.post("/v1/tasks", tok, "k", `{"kind":"echo","tenant":"globex"}`), http.StatusUnprocessableEntity, "invalid_request"); p.Field != "tenant" {
		t.Errorf("field %q, want tenant", p.Field)
	}
	if p := e.problem(e.post("/v1/tasks", tok, "k", `{"kind":"echo","max_attempts":0}`), http.StatusUnprocessableEntity, "invalid_request"); p.Field != "max_attempts" {
		t.Errorf("field %q, want max_attempts", p.Field)
	}
	if got := e.count(`SELECT count(*) FROM idempotency_keys`); got != 0 {
		t.Errorf("%d idempotency records after refusals, want 0", got)
	}
	// The key is still free. The body may name the token's own tenant.
	task := e.task(e.post("/v1/tasks", tok, "k", `{"kind":"echo","tenant":"acme","run_at":"2030-01-02T03:04:05Z"}`), http.StatusCreated)
	if task.Tenant != "acme" || task.RunAt.Year() != 2030 || string(task.Payload) != "{}" {
		t.Errorf("task %+v", task)
	}
}

// TestReapedKey: once a key's record is gone (retention), the key makes a
// new task.
func TestReapedKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpapi.Config{})
	tok := e.tenant("acme")
	first := e.task(e.post("/v1/tasks", tok, "k", echoBody), http.StatusCreated)
	if _, err := e.db.Exec(context.Background(), `DELETE FROM idempotency_keys`); err != nil {
		t.Fatal(err)
	}
	r := e.post("/v1/tasks", tok, "k", echoBody)
	second := e.task(r, http.StatusCreated)
	if r.replayed() || second.ID == first.ID {
		t.Errorf("after the record was reaped: task %d (replayed %v), first %d", second.ID, r.replayed(), first.ID)
	}
	if got := e.count(`SELECT count(*) FROM tasks`); got != 2 {
		t.Errorf("%d tasks, want 2", got)
	}
}

// TestCrashAfterEnqueue: a request that enqueued and died before storing
// its answer leaves its record in flight; while it is locked the key is
// 409, then a retry takes it over and finds the same task.
func TestCrashAfterEnqueue(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpapi.Config{})
	tok := e.tenant("acme")
	ctx := context.Background()
	first := e.task(e.post("/v1/tasks", tok, "k", echoBody), http.StatusCreated)
	// As if the answer had never been stored, the lock still running.
	if _, err := e.db.Exec(ctx, `UPDATE idempotency_keys SET state = 'in_flight', status = NULL, headers = NULL,
		body = NULL, completed_at = NULL, locked_until = now() + interval '1 hour'`); err != nil {
		t.Fatal(err)
	}
	r := e.post("/v1/tasks", tok, "k", echoBody)
	e.problem(r, http.StatusConflict, "idempotency_key_in_flight")
	if r.header.Get("Retry-After") == "" {
		t.Error("409 without Retry-After")
	}
	// A different request under the key is still refused as such.
	e.problem(e.post("/v1/tasks", tok, "k", `{"kind":"other"}`), http.StatusUnprocessableEntity, "idempotency_key_reused")

	// The lock runs out: the retry takes over.
	if _, err := e.db.Exec(ctx, `UPDATE idempotency_keys SET locked_until = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	r = e.post("/v1/tasks", tok, "k", echoBody)
	got := e.task(r, http.StatusCreated)
	if r.replayed() || got.ID != first.ID {
		t.Errorf("takeover: task %d (replayed %v), want the first task %d", got.ID, r.replayed(), first.ID)
	}
	if n := e.count(`SELECT count(*) FROM tasks`); n != 1 {
		t.Errorf("%d tasks, want 1", n)
	}
	again := e.post("/v1/tasks", tok, "k", echoBody)
	if !again.replayed() || !bytes.Equal(again.body, r.body) {
		t.Errorf("after the takeover: %d replayed=%v", again.status, again.replayed())
	}
}

// TestServerErrorReleases: a 5xx is not stored; the record is released so
// the retry runs at once, under the same submission key.
func TestServerErrorReleases(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpapi.Config{})
	tok := e.tenant("acme")
	ctx := context.Background()
	if _, err := e.db.Exec(ctx, `
		CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'disk on fire'; END $$;
		CREATE TRIGGER refuse BEFORE INSERT ON tasks FOR EACH ROW EXECUTE FUNCTION refuse();`); err != nil {
		t.Fatal(err)
	}
	p := e.problem(e.post("/v1/tasks", tok, "k", echoBody), http.StatusInternalServerError, "internal")
	if strings.Contains(p.Detail, "disk") {
		t.Errorf("a 5xx shows its cause: %s", p.Detail)
	}
	if n := e.count(`SELECT count(*) FROM idempotency_keys WHERE state = 'in_flight' AND locked_until <= now() AND status IS NULL`); n != 1 {
		t.Errorf("%d released records, want 1", n)
	}
	if _, err := e.db.Exec(ctx, `DROP TRIGGER refuse ON tasks`); err != nil {
		t.Fatal(err)
	}
	r := e.post("/v1/tasks", tok, "k", echoBody)
	e.task(r, http.StatusCreated)
	if r.replayed() {
		t.Error("the retry after a 5xx was a replay")
	}
	if n := e.count(`SELECT count(*) FROM tasks`); n != 1 {
		t.Errorf("%d tasks, want 1", n)
	}
}

// TestKeyOptional: with IdempotencyKeyOptional a request without a key
// acts anew each time; one with a key is still idempotent.
func TestKeyOptional(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpapi.Config{IdempotencyKeyOptional: true})
	tok := e.tenant("acme")
	a := e.task(e.post("/v1/tasks", tok, "", echoBody), http.StatusCreated)
	b := e.task(e.post("/v1/tasks", tok, "", echoBody), http.StatusCreated)
	if a.ID == b.ID {
		t.Error("two unkeyed requests made one task")
	}
	e.task(e.post("/v1/tasks", tok, "k", echoBody), http.StatusCreated)
	if r := e.post("/v1/tasks", tok, "k", echoBody); !r.replayed() {
		t.Errorf("keyed retry not replayed: %d", r.status)
	}
	e.problem(e.do(http.MethodPost, "/v1/tasks", tok, echoBody, httpapi.KeyHeader, ""), http.StatusBadRequest, "idempotency_key_invalid")
	if n := e.count(`SELECT count(*) FROM tasks`); n != 3 {
		t.Errorf("%d tasks, want 3", n)
	}
}

// TestExpireKeys: the retention sweep deletes records older than its
// window, in batches, but never one whose request is running; a key it
// deleted makes a new task.
func TestExpireKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpapi.Config{})
	tok := e.tenant("acme")
	ctx := context.Background()
	for _, k := range []string{"old-1", "old-2", "crashed", "running", "fresh"} {
		e.task(e.post("/v1/tasks", tok, k, echoBody), http.StatusCreated)
	}
	if _, err := e.db.Exec(ctx, `UPDATE idempotency_keys SET created_at = now() - interval '2 days' WHERE key <> 'fresh';
		UPDATE idempotency_keys SET state = 'in_flight', locked_until = now() - interval '1 day' WHERE key = 'crashed';
		UPDATE idempotency_keys SET state = 'in_flight', locked_until = now() + interval '1 minute' WHERE key = 'running'`); err != nil {
		t.Fatal(err)
	}
	expire := httpapi.ExpireKeys(e.db)
	if _, err := expire(ctx, 0, 10); err == nil {
		t.Error("a zero window was accepted")
	}
	var total int64
	for {
		n, err := expire(ctx, 24*time.Hour, 2)
		if err != nil {
			t.Fatal(err)
		}
		total += n
		if n < 2 {
			break
		}
	}
	if total != 3 {
		t.Errorf("expired %d records, want 3", total)
	}
	if n := e.count(`SELECT count(*) FROM idempotency_keys WHERE key IN ('running', 'fresh')`); n != 2 {
		t.Errorf("%d of the running and fresh records left, want 2", n)
	}
	r := e.post("/v1/tasks", tok, "old-1", echoBody)
	if e.task(r, http.StatusCreated); r.replayed() {
		t.Error("an expired key was replayed")
	}
	if n := e.count(`SELECT count(*) FROM tasks`); n != 6 {
		t.Errorf("%d tasks, want 6", n)
	}
}
