package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/httpapi"
	"github.com/agentledger/agentledger/operator"
	"github.com/agentledger/agentledger/tenants"
)

// TestTaskLifecycle: create, read, cancel and replay, each keyed, with the
// answers the routes document.
func TestTaskLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpapi.Config{})
	tok := e.tenant("acme")
	ctx := context.Background()

	r := e.post("/v1/tasks", tok, "c1", `{"kind":"report","queue":"reports","payload":{"month":"2025-01"},"priority":3,"max_attempts":4}`)
	created := e.task(r, http.StatusCreated)
	if created.Kind != "report" || created.Queue != "reports" || created.Priority != 3 || created.MaxAttempts != 4 ||
		created.State != "queued" || created.Tenant != "acme" || string(created.Payload) != `{"month":"2025-01"}` ||
		string(created.Result) != "null" || created.LastError != nil || created.FinishedAt != nil {
		t.Errorf("created %+v", created)
	}
	var raw map[string]any
	if err := json.Unmarshal(r.body, &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"id", "run_at", "max_attempts", "created_at", "updated_at", "cancel_requested_at", "finished_at", "last_error", "wait_reason", "result"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("task JSON lacks %q: %s", k, r.body)
		}
	}
	if _, ok := raw["submission_key"]; ok {
		t.Errorf("task JSON shows the submission key: %s", r.body)
	}

	path := fmt.Sprintf("/v1/tasks/%d", created.ID)
	got := e.task(e.do(http.MethodGet, path, tok, ""), http.StatusOK)
	if got.ID != created.ID || got.Kind != "report" {
		t.Errorf("get %+v", got)
	}

	// A running task is flagged: 202, the attempt stops at its heartbeat;
	// its worker's acknowledgement names the tenant's token, not the
	// operator.
	claimed, err := e.claims.Claim(ctx, claims.ClaimParams{Queue: "reports", Worker: "w1", Limit: 1, Lease: time.Hour})
	if err != nil || len(claimed) != 1 {
		t.Fatal(claimed, err)
	}
	flagged := e.task(e.post(path+"/cancel", tok, "x1", ""), http.StatusAccepted)
	if flagged.State != "running" || flagged.CancelRequestedAt == nil {
		t.Errorf("cancel of a running task: %+v", flagged)
	}
	if err := e.claims.Cancelled(ctx, claims.LeaseOf(claimed[0]), "cancelled by operator"); err != nil {
		t.Fatal(err)
	}
	if v := e.task(e.do(http.MethodGet, path, tok, ""), http.StatusOK); v.State != "cancelled" || v.LastError == nil ||
		!strings.HasPrefix(*v.LastError, "cancelled by tenant:") || !strings.Contains(*v.LastError, ", token ") {
		t.Errorf("a running task the tenant cancelled, once its worker saw it: %+v, want its last error to name the token", v)
	}

	// A queued task is cancelled at once: 200; again (another key) still 200.
	id2 := e.enqueue(claims.EnqueueParams{Tenant: "acme"})
	p2 := fmt.Sprintf("/v1/tasks/%d", id2)
	c := e.post(p2+"/cancel", tok, "x2", "{}")
	if v := e.task(c, http.StatusOK); v.State != "cancelled" || v.FinishedAt == nil || v.LastError == nil ||
		!strings.HasPrefix(*v.LastError, "cancelled by tenant:") {
		t.Errorf("cancel of a queued task: %+v, want it cancelled by the tenant's token", v)
	}
	if v := e.task(e.post(p2+"/cancel", tok, "x3", ""), http.StatusOK); v.State != "cancelled" {
		t.Errorf("second cancel: %+v", v)
	}
	if r := e.post(p2+"/cancel", tok, "x2", "{}"); !r.replayed() || string(r.body) != string(c.body) {
		t.Errorf("cancel retry: %d replayed=%v", r.status, r.replayed())
	}

	// Replay: 202 queued; the retry replays the 202 although the task has
	// moved on; a new replay of the queued task is a 409, stored too.
	rp := e.post(p2+"/replay", tok, "r1", "")
	if v := e.task(rp, http.StatusAccepted); v.State != "queued" {
		t.Errorf("replay: %+v", v)
	}
	if r := e.post(p2+"/replay", tok, "r1", ""); !r.replayed() || string(r.body) != string(rp.body) || r.status != http.StatusAccepted {
		t.Errorf("replay retry: %d replayed=%v", r.status, r.replayed())
	}
	e.problem(e.post(p2+"/replay", tok, "r2", ""), http.StatusConflict, "conflict")
	if r := e.post(p2+"/replay", tok, "r2", ""); !r.replayed() || r.status != http.StatusConflict {
		t.Errorf("409 retry: %d replayed=%v", r.status, r.replayed())
	}
	// An unknown task is not found (and the answer is stored like any 4xx).
	e.problem(e.post("/v1/tasks/999999/cancel", tok, "x4", ""), http.StatusNotFound, "not_found")
}

// TestTenantIsolation: a tenant never sees, cancels or replays another's
// task: 404, not 403.
func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpapi.Config{})
	a, b := e.tenant("acme"), e.tenant("globex")
	task := e.task(e.post("/v1/tasks", a, "k", echoBody), http.StatusCreated)
	path := fmt.Sprintf("/v1/tasks/%d", task.ID)
	e.problem(e.do(http.MethodGet, path, b, ""), http.StatusNotFound, "not_found")
	e.problem(e.post(path+"/cancel", b, "k1", ""), http.StatusNotFound, "not_found")
	e.problem(e.post(path+"/replay", b, "k2", ""), http.StatusNotFound, "not_found")
	var list httpapi.TaskList
	if r := e.do(http.MethodGet, "/v1/tasks", b, ""); r.status != http.StatusOK || json.Unmarshal(r.body, &list) != nil || len(list.Tasks) != 0 {
		t.Errorf("globex lists %d: %s", r.status, r.body)
	}
	if got := e.task(e.do(http.MethodGet, path, a, ""), http.StatusOK); got.State != "queued" {
		t.Errorf("acme's task was touched: %+v", got)
	}
}

// TestAuthentication: no token, another scheme, a bad or a revoked token
// are 401 with WWW-Authenticate, on reads and writes alike.
func TestAuthentication(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpapi.Config{})
	tok := e.tenant("acme")
	ctx := context.Background()
	_, revoked, err := e.tenants.CreateToken(ctx, "acme", "old", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.tenants.RevokeToken(ctx, revoked[:12]); err != nil {
		t.Fatal(err)
	}
	for name, hdr := range map[string][]string{
		"none":    nil,
		"basic":   {"Authorization", "Basic YWxhZGRpbjpvcGVuc2VzYW1l"},
		"empty":   {"Authorization", "Bearer "},
		"unknown": {"Authorization", "Bearer alt_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"},
		"garbage": {"Authorization", "Bearer hunter2"},
		"revoked": {"Authorization", "Bearer " + revoked},
		"twice":   {"Authorization", "Bearer " + tok, "Authorization", "Bearer " + tok},
	} {
		for _, m := range []string{http.MethodGet, http.MethodPost} {
			path, body := "/v1/tasks", ""
			if m == http.MethodPost {
				body = echoBody
				hdr = append(slices.Clone(hdr), httpapi.KeyHeader, "k")
			}
			r := e.do(m, path, "", body, hdr...)
			p := e.problem(r, http.StatusUnauthorized, "unauthorized")
			if !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("%s %s: WWW-Authenticate %q", name, m, r.header.Get("WWW-Authenticate"))
			}
			if strings.Contains(p.Detail, revoked) || strings.Contains(p.Detail, "hunter2") {
				t.Errorf("%s: the detail shows the token: %s", name, p.Detail)
			}
		}
	}
	if n := e.count(`SELECT count(*) FROM idempotency_keys`); n != 0 {
		t.Errorf("%d records stored for unauthenticated requests", n)
	}
	// The scheme is case-insensitive.
	if r := e.do(http.MethodGet, "/v1/tasks", "", "", "Authorization", "bearer "+tok); r.status != http.StatusOK {
		t.Errorf("lower-case scheme: %d %s", r.status, r.body)
	}
}

// TestListPages: newest first, filtered, paged by an opaque cursor; bad
// parameters are 400.
func TestListPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpapi.Config{})
	tok := e.tenant("acme")
	var ids []int64
	for i := range 5 {
		ids = append(ids, e.enqueue(claims.EnqueueParams{Tenant: "acme", Kind: fmt.Sprintf("k%d", i%2), Queue: "q"}))
	}
	e.enqueue(claims.EnqueueParams{Tenant: "globex"})
	if _, err := operator.New(e.db).Cancel(context.Background(), "acme", ids[0]); err != nil {
		t.Fatal(err)
	}

	list := func(query string) httpapi.TaskList {
		t.Helper()
		r := e.do(http.MethodGet, "/v1/tasks"+query, tok, "")
		if r.status != http.StatusOK {
			t.Fatalf("list %s: %d %s", query, r.status, r.body)
		}
		var l httpapi.TaskList
		if err := json.Unmarshal(r.body, &l); err != nil {
			t.Fatal(err)
		}
		return l
	}
	idsOf := func(l httpapi.TaskList) []int64 {
		var out []int64
		for _, t := range l.Tasks {
			out = append(out, t.ID)
		}
		return out
	}

	var seen []int64
	query := "?limit=2"
	pages := 0
	for {
		l := list(query)
		pages++
		seen = append(seen, idsOf(l)...)
		if l.NextCursor == nil {
			break
		}
		if _, err := strconv.ParseInt(*l.NextCursor, 10, 64); err == nil {
			t.Errorf("cursor %q is a bare id", *l.NextCursor)
		}
		query = "?limit=2&cursor=" + url.QueryEscape(*l.NextCursor)
	}
	want := slices.Clone(ids)
	slices.Reverse(want)
	if pages != 3 || !slices.Equal(seen, want) {
		t.Errorf("paged %v in %d pages, want %v in 3", seen, pages, want)
	}
	// A full last page has no next cursor.
	if l := list("?limit=5"); len(l.Tasks) != 5 || l.NextCursor != nil {
		t.Errorf("limit=5: %d tasks, next %v", len(l.Tasks), l.NextCursor)
	}
	if got := idsOf(list("?kind=k1")); !slices.Equal(got, []int64{ids[3], ids[1]}) {
		t.Errorf("kind=k1: %v", got)
	}
	if got := idsOf(list("?state=cancelled")); !slices.Equal(got, []int64{ids[0]}) {
		t.Errorf("state=cancelled: %v", got)
	}
	if got := idsOf(list("?state=cancelled,queued&queue=q")); len(got) != 5 {
		t.Errorf("state=cancelled,queued: %v", got)
	}
	if got := idsOf(list("?state=cancelled&state=queued&queue=other")); len(got) != 0 {
		t.Errorf("queue=other: %v", got)
	}
	for query, field := range map[string]string{
		"?limit=0":         "limit",
		"?limit=501":       "limit",
		"?limit=x":         "limit",
		"?cursor=bm9wZQ":   "cursor",
		"?cursor=%%%":      "",
		"?state=sleeping":  "state",
		"?colour=red":      "colour",
		"?queue=a&queue=b": "queue",
		"?cursor=djEuLTE":  "cursor",
		"?kind=%00":        "kind",
		"?queue=%ff":       "queue",
		"?%ff=1":           "",
	} {
		r := e.do(http.MethodGet, "/v1/tasks"+query, tok, "")
		if p := e.problem(r, http.StatusBadRequest, "invalid_parameter"); p.Field != field {
			t.Errorf("%s: field %q, want %q", query, p.Field, field)
		}
	}
}

// TestRoutes: unknown routes and methods are problems too; extra routes,
// hooks and Observe see every request.
func TestRoutes(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var observed []string
	hooks := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			t.Error("hook request carries a token")
		}
		b, err := io.ReadAll(r.Body)
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			w.WriteHeader(http.StatusRequestEntityTooLarge)
			return
		}
		fmt.Fprintf(w, "hook %s %s", r.PathValue("source"), b)
	})
	e := newEnv(t, httpapi.Config{Hooks: hooks, MaxBody: 64, Observe: func(route string, status int, d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		observed = append(observed, fmt.Sprintf("%s %d", route, status))
	}})
	e.srv.Handle("GET /healthz", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "ok") }))
	e.srv.Handle("GET /boom", http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }))
	tok := e.tenant("acme")

	if r := e.do(http.MethodGet, "/healthz", "", ""); r.status != http.StatusOK || string(r.body) != "ok" {
		t.Errorf("healthz: %d %s", r.status, r.body)
	}
	if r := e.do(http.MethodPost, "/v1/hooks/github", "", `{"zen":"x"}`); r.status != http.StatusOK || string(r.body) != `hook github {"zen":"x"}` {
		t.Errorf("hook: %d %s", r.status, r.body)
	}
	e.problem(e.do(http.MethodGet, "/nope", tok, ""), http.StatusNotFound, "route_not_found")
	r := e.do(http.MethodDelete, "/v1/tasks/1", tok, "")
	e.problem(r, http.StatusMethodNotAllowed, "method_not_allowed")
	if allow := r.header.Get("Allow"); !strings.Contains(allow, "GET") {
		t.Errorf("405 with Allow %q", allow)
	}
	// A path ServeMux would redirect to its clean form is refused, naming it.
	unclean := e.do(http.MethodPost, "/v1//tasks", tok, `{"kind":"echo"}`)
	e.problem(unclean, http.StatusNotFound, "route_not_found")
	if !strings.Contains(string(unclean.body), `its clean form: /v1/tasks`) || unclean.header.Get("Location") != "" {
		t.Errorf("unclean path: %s (Location %q)", unclean.body, unclean.header.Get("Location"))
	}
	e.problem(e.do(http.MethodGet, "/v1/tasks/0", tok, ""), http.StatusNotFound, "not_found")
	e.problem(e.do(http.MethodGet, "/v1/tasks/007", tok, ""), http.StatusNotFound, "not_found")
	e.task(e.post("/v1/tasks", tok, "k", `{"kind":"echo"}`), http.StatusCreated)
	e.problem(e.do(http.MethodGet, "/boom", "", ""), http.StatusInternalServerError, "internal")
	if r := e.do(http.MethodPost, "/v1/hooks/github", "", `{"big":"`+strings.Repeat("x", 100)+`"}`); r.status != http.StatusRequestEntityTooLarge {
		t.Errorf("hook over MaxBody: %d", r.status)
	}

	mu.Lock()
	defer mu.Unlock()
	want := []string{"GET /healthz 200", "POST /v1/hooks/{source} 200", "unmatched 404", "unmatched 405", "unmatched 404",
		"GET /v1/tasks/{id} 404", "GET /v1/tasks/{id} 404", "POST /v1/tasks 201", "GET /boom 500",
		"POST /v1/hooks/{source} 413"}
	if !slices.Equal(observed, want) {
		t.Errorf("observed\n%q\nwant\n%q", observed, want)
	}
}

// TestNewChecksConfig: the required parts and sane limits.
func TestNewChecksConfig(t *testing.T) {
	t.Parallel()
	_, db := newServer(t, httpapi.Config{})
	for name, cfg := range map[string]httpapi.Config{
		"empty":          {},
		"no tenants":     {DB: db, Claims: claims.New(db)},
		"negative lease": {DB: db, Claims: claims.New(db), Tenants: tenants.NewStore(db), InFlightLease: -time.Second},
		"negative body":  {DB: db, Claims: claims.New(db), Tenants: tenants.NewStore(db), MaxBody: -1},
	} {
		if _, err := httpapi.New(cfg); err == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
}

// A payload with \u0000 in a string is a 422 naming the payload, not a 500
// that a retry under the same key would meet forever.
func TestSubmitNULPayloadIs422(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpapi.Config{})
	token := e.tenant("acme")
	p := e.problem(e.post("/v1/tasks", token, "k1", `{"kind":"echo","payload":{"a":"x\u0000"}}`), http.StatusUnprocessableEntity, "invalid_request")
	if !strings.Contains(p.Detail, `payload: holds \u0000`) {
		t.Errorf("detail %q", p.Detail)
	}
	e.problem(e.post("/v1/tasks", token, "k1", `{"kind":"echo","payload":{"a":"x\u0000"}}`), http.StatusUnprocessableEntity, "invalid_request")
}

// A payload encoding/json accepts but PostgreSQL's jsonb refuses — a lone
// UTF-16 surrogate, a number beyond numeric's range — is a 422 naming the
// payload, not a 500 a retry would meet forever; as every refusal of an
// invalid request, it frees its key for the corrected request.
func TestSubmitUnstorablePayloadIs422(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpapi.Config{})
	token := e.tenant("acme")
	for i, payload := range []string{`{"a":"\ud800"}`, `{"\udfff":1}`, `{"a":"\ud800\u0041"}`, `{"a":1e1000000}`,
		`{"a":1e-1000000}`, `{"a":1` + strings.Repeat("0", 140000) + `}`} {
		body := `{"kind":"echo","payload":` + payload + `}`
		key := fmt.Sprint("k", i)
		p := e.problem(e.post("/v1/tasks", token, key, body), http.StatusUnprocessableEntity, "invalid_request")
		if p.Field != "payload" || (!strings.Contains(p.Detail, "payload: PostgreSQL's jsonb cannot store it (") &&
			!strings.Contains(p.Detail, "payload: holds a lone surrogate escape")) {
			t.Errorf("payload %.40s: %+v", payload, p)
		}
		if r := e.post("/v1/tasks", token, key, body); r.status != http.StatusUnprocessableEntity || r.replayed() {
			t.Errorf("payload %.40s: the retry answered %d (replayed %v), want a fresh 422", payload, r.status, r.replayed())
		}
	}
	if n := e.count(`select count(*) from tasks`); n != 0 {
		t.Errorf("%d tasks made", n)
	}
	if n := e.count(`select count(*) from idempotency_keys where status is not null`); n != 0 {
		t.Errorf("%d answers kept under their keys", n)
	}
	// Each key is free for the corrected request, whichever check refused
	// its payload: before the action, or PostgreSQL inside it.
	for i := range 6 {
		e.task(e.post("/v1/tasks", token, fmt.Sprint("k", i), fmt.Sprintf(`{"kind":"echo","payload":{"a":"fixed %d"}}`, i)), http.StatusCreated)
	}
}
