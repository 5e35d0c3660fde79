package tools_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/agentledgertest/downstream"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/tools"
)

func newDownstream(t *testing.T) *downstream.Server {
	srv := downstream.New()
	t.Cleanup(srv.Close)
	return srv
}

func post(url string) string {
	return fmt.Sprintf(`{"method":"POST","url":%q,"body":{"amount":10,"to":"acme"}}`, url)
}

// One business effect; the same call again is served from the ledger; the
// Idempotency-Key is the ledger's downstream key, scoped per target.
func TestHTTPRequestOnceThenFromLedger(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	s1, s2 := newDownstream(t), newDownstream(t)
	tool, _ := e.http(tools.HTTPConfig{AllowedHosts: []string{hostOf(s1.URL), hostOf(s2.URL)}})
	task := e.task()

	first, err := tools.Invoke(ctx, e.Ledger, tool, call(task, "tool/0", post(s1.URL+"/charges")))
	if err != nil || first.Replayed || first.Status != 201 || !strings.Contains(string(first.Body), `"effect": 1`) {
		t.Fatalf("first: %+v %v", first, err)
	}
	// The same request spelled otherwise is the same call.
	again, err := tools.Invoke(ctx, e.Ledger, tool, call(task, "tool/0",
		fmt.Sprintf(`{"body":{"to":"acme","amount":10},"url":%q,"method":"post"}`, s1.URL+"/charges")))
	if err != nil || !again.Replayed || again.Status != 201 || !sameJSON(t, again.Body, first.Body) {
		t.Fatalf("again: %+v %v", again, err)
	}
	if s1.Hits() != 1 || s1.Effects() != 1 {
		t.Fatalf("hits %d effects %d", s1.Hits(), s1.Effects())
	}
	t1, t2 := hostOf(s1.URL), hostOf(s2.URL)
	downKey := func(step, target string) string {
		k, err := e.Ledger.DownstreamKeyOf(ctx, task.Tenant, task.ID, task.Generation, step, "http_request", target)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	if s1.EffectsFor(downKey("tool/0", t1)) != 1 {
		t.Fatal("downstream did not see the ledger's downstream key")
	}

	if _, err := tools.Invoke(ctx, e.Ledger, tool, call(task, "tool/1", post(s2.URL+"/charges"))); err != nil {
		t.Fatal(err)
	}
	if s2.EffectsFor(downKey("tool/1", t2)) != 1 || s1.EffectsFor(downKey("tool/1", t2)) != 0 ||
		downKey("tool/0", t1) == downKey("tool/0", t2) {
		t.Fatal("downstream keys are not scoped per target")
	}
}

// Drill 1: the downstream commits, the answer is lost. The retry re-sends
// the same key; the downstream deduplicates; the ledger keeps its answer.
func TestHTTPRequestCommitThenDrop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	srv := newDownstream(t)
	tool, _ := e.http(tools.HTTPConfig{AllowedHosts: []string{hostOf(srv.URL)}})
	task := e.task()
	c := call(task, "tool/0", post(srv.URL+"/charges"))

	srv.Inject(downstream.CommitThenDrop)
	if _, err := tools.Invoke(ctx, e.Ledger, tool, c); err == nil || isPermanent(err) {
		t.Fatalf("dropped answer: %v, want a transient error", err)
	}
	retried, err := tools.Invoke(ctx, e.Ledger, tool, c)
	if err != nil || retried.Replayed || retried.Status != 200 {
		t.Fatalf("retry: %+v %v", retried, err)
	}
	key, err := e.Ledger.DownstreamKeyOf(ctx, task.Tenant, task.ID, task.Generation, "tool/0", "http_request", hostOf(srv.URL))
	if err != nil || srv.Effects() != 1 || srv.Hits() != 2 || srv.EffectsFor(key) != 1 {
		t.Fatalf("effects %d hits %d", srv.Effects(), srv.Hits())
	}
	stored, err := tools.Invoke(ctx, e.Ledger, tool, c)
	if err != nil || !stored.Replayed || stored.Status != retried.Status || !sameJSON(t, stored.Body, retried.Body) || srv.Hits() != 2 {
		t.Fatalf("stored: %+v %v, hits %d", stored, err, srv.Hits())
	}
}

func TestHTTPRequestTransientAnswers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	srv := newDownstream(t)
	tool, _ := e.http(tools.HTTPConfig{AllowedHosts: []string{hostOf(srv.URL)}})
	task := e.task()

	c := call(task, "tool/0", post(srv.URL))
	srv.Inject(downstream.Unavailable)
	_, err := tools.Invoke(ctx, e.Ledger, tool, c)
	var after *agentledger.RetryAfterError
	if err == nil || isPermanent(err) || errors.As(err, &after) || !strings.Contains(err.Error(), "503") {
		t.Fatalf("503: %v", err)
	}
	if res, err := tools.Invoke(ctx, e.Ledger, tool, c); err != nil || res.Status != 201 || srv.Effects() != 1 || srv.Hits() != 2 {
		t.Fatalf("after 503: %+v %v, effects %d", res, err, srv.Effects())
	}

	c = call(task, "tool/1", post(srv.URL))
	srv.Inject(downstream.RateLimited)
	_, err = tools.Invoke(ctx, e.Ledger, tool, c)
	if !errors.As(err, &after) || after.After != time.Second || isPermanent(err) {
		t.Fatalf("429: %v", err)
	}
	if res, err := tools.Invoke(ctx, e.Ledger, tool, c); err != nil || res.Status != 201 || srv.Effects() != 2 {
		t.Fatalf("after 429: %+v %v, effects %d", res, err, srv.Effects())
	}
}

// A 4xx is permanent and stored: a later call returns the same failure
// without a request.
func TestHTTPRequestPermanentFailureIsStored(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	rec := newRecorder(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnprocessableEntity)
		_, _ = io.WriteString(w, `{"error":"amount must be positive"}`)
	})
	tool, _ := e.http(tools.HTTPConfig{AllowedHosts: []string{hostOf(rec.URL)}})
	c := call(e.task(), "tool/0", post(rec.URL))

	res, err := tools.Invoke(ctx, e.Ledger, tool, c)
	if !isPermanent(err) || res.Status != 422 || !contains(err.Error(), "422", "amount must be positive") ||
		!contains(string(res.Body), "amount must be positive") {
		t.Fatalf("first: %+v %v", res, err)
	}
	res, err = tools.Invoke(ctx, e.Ledger, tool, c)
	var failed *ledger.FailedError
	if !isPermanent(err) || !errors.As(err, &failed) || !res.Replayed || res.Status != 422 ||
		failed.Result.Status != 422 || !contains(failed.Message, "amount must be positive") {
		t.Fatalf("again: %+v %v", res, err)
	}
	if n := len(rec.requests()); n != 1 {
		t.Fatalf("%d requests", n)
	}
}

func TestHTTPRequestDisallowedHost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	srv := newDownstream(t)
	task := e.task()
	// Another port, and the right port over https (the bare host:port).
	bare := strings.TrimPrefix(hostOf(srv.URL), "http://")
	for _, hosts := range [][]string{nil, {"example.com", "http://127.0.0.1:1"}, {bare}} {
		tool, unsafe := e.http(tools.HTTPConfig{AllowedHosts: hosts, UnsafeAllowedHosts: hosts})
		_, err := tools.Invoke(ctx, e.Ledger, tool, call(task, "tool/0", post(srv.URL)))
		want := fmt.Sprintf("%s is not allowed: the daemon's AGENTLEDGER_HTTP_ALLOWED_HOSTS does not list it", hostOf(srv.URL))
		if len(hosts) == 1 { // listed, for https only: the message says how to allow http
			want = fmt.Sprintf("%s is not allowed: AGENTLEDGER_HTTP_ALLOWED_HOSTS lists %s for https only (a bare entry means https); write http://%s in it to allow plain http",
				hostOf(srv.URL), bare, bare)
		}
		if !isPermanent(err) || !strings.Contains(err.Error(), want) {
			t.Fatalf("%v: %v", hosts, err)
		}
		_, err = tools.Invoke(ctx, e.Ledger, unsafe, call(task, "tool/0", post(srv.URL)))
		if !isPermanent(err) || !strings.Contains(err.Error(), "AGENTLEDGER_UNSAFE_HTTP_ALLOWED_HOSTS") {
			t.Fatalf("unsafe %v: %v", hosts, err)
		}
	}
	// The converse: listed for plain http, called over https.
	tool, _ := e.http(tools.HTTPConfig{AllowedHosts: []string{"http://" + bare}})
	_, err := tools.Invoke(ctx, e.Ledger, tool, call(task, "tool/0", post("https://"+bare)))
	want := fmt.Sprintf("https://%s is not allowed: AGENTLEDGER_HTTP_ALLOWED_HOSTS lists %s for plain http only; write %s (or https://%s) in it to allow https",
		bare, bare, bare, bare)
	if !isPermanent(err) || !strings.Contains(err.Error(), want) {
		t.Fatalf("https to an http entry: %v", err)
	}
	// Each tool has its own list.
	_, unsafe := e.http(tools.HTTPConfig{AllowedHosts: []string{hostOf(srv.URL)}})
	if _, err := tools.Invoke(ctx, e.Ledger, unsafe, call(task, "tool/0", post(srv.URL))); !isPermanent(err) {
		t.Fatalf("unsafe_http used http_request's list: %v", err)
	}
	if srv.Hits() != 0 || e.LedgerText() != "" {
		t.Fatalf("hits %d, ledger %q", srv.Hits(), e.LedgerText())
	}
}

func TestHTTPEffectClasses(t *testing.T) {
	t.Parallel()
	keyed, err := tools.NewHTTPRequest(tools.HTTPConfig{AllowedHosts: []string{"api.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	unsafe, err := tools.NewUnsafeHTTP(tools.HTTPConfig{UnsafeAllowedHosts: []string{"api.example.com:443"}})
	if err != nil {
		t.Fatal(err)
	}
	task := &agentledger.Task{ID: 1, Tenant: "acme", Generation: 1}
	for _, tc := range []struct {
		tool   *tools.HTTPTool
		method string
		class  ledger.Class
	}{
		{keyed, "GET", ledger.Pure}, {keyed, "POST", ledger.Keyed}, {keyed, "DELETE", ledger.Keyed},
		{unsafe, "GET", ledger.Pure}, {unsafe, "PATCH", ledger.Unsafe},
	} {
		eff, err := tc.tool.Effect(call(task, "tool/0", `{"method":"`+tc.method+`","url":"https://API.example.com/x"}`))
		if err != nil || eff.Class != tc.class || eff.Operation != tc.tool.Name() || eff.StepPath != "tool/0" {
			t.Fatalf("%s %s: %+v %v", tc.tool.Name(), tc.method, eff, err)
		}
		want := `{"method":"` + tc.method + `","url":"https://API.example.com/x"}`
		if string(eff.Request) != want {
			t.Fatalf("request %s, want %s", eff.Request, want)
		}
	}
}

func TestHTTPArgsValidation(t *testing.T) {
	t.Parallel()
	tool, err := tools.NewHTTPRequest(tools.HTTPConfig{AllowedHosts: []string{"api.example.com"}, MaxRequestBytes: 20})
	if err != nil {
		t.Fatal(err)
	}
	task := &agentledger.Task{ID: 1, Tenant: "acme", Generation: 1}
	for args, want := range map[string]string{
		`[]`:                                                   "arguments must be",
		`{"method":"POST","url":"x","y":1}`:                    `unknown field "y"`,
		`{"method":"HEAD","url":"x"}`:                          `method "HEAD" is not one of`,
		`{"method":"GET","url":"/relative"}`:                   "must be absolute",
		`{"method":"GET","url":"ftp://h/x"}`:                   "must be absolute, with scheme http or https",
		`{"method":"GET","url":"http://u:p@api.example.com/"}`: "must not carry credentials",
		`{"method":"POST","url":"https://api.example.com","headers":{"idempotency-key":"k"}}`:     "Idempotency-Key is set by agentledger",
		`{"method":"POST","url":"https://api.example.com","headers":{"a b":"k"}}`:                 "not a valid token",
		`{"method":"POST","url":"https://api.example.com","headers":{"X-A":"1\r\nX-B: 2"}}`:       "control character",
		`{"method":"POST","url":"https://api.example.com","headers":{"x-a":"1","X-A":"2"}}`:       "given twice",
		`{"method":"POST","url":"https://api.example.com","body":{"text":"far too long for it"}}`: "request body larger than 20 bytes",
	} {
		_, err := tool.Effect(call(task, "tool/0", args))
		if !isPermanent(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", args, err, want)
		}
	}
}

// A host the configuration does not allow is refused when the effect would
// be performed — nothing is recorded, so a retry after the host is allowed
// performs it — while a replay of an effect the ledger completed is served
// whatever the configuration says now.
func TestHTTPHostNotAllowed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	api := downstream.New()
	t.Cleanup(api.Close)
	host := hostOf(api.URL)
	args := `{"method":"POST","url":"` + api.URL + `/x","body":{"n":1}}`
	deny, _ := e.http(tools.HTTPConfig{AllowedHosts: []string{"api.example.com"}})
	allow, _ := e.http(tools.HTTPConfig{AllowedHosts: []string{host}})
	a := e.task()

	_, err := tools.Invoke(ctx, e.Ledger, deny, call(a, "tool/0", args))
	if !isPermanent(err) || !strings.Contains(err.Error(), "is not allowed") || api.Hits() != 0 {
		t.Fatalf("denied: %v, %d hits", err, api.Hits())
	}
	if j := e.Journal(a); len(j) != 0 {
		t.Fatalf("a refused effect was recorded: %+v", j)
	}
	if _, err := tools.Invoke(ctx, e.Ledger, allow, call(a, "tool/0", args)); err != nil || api.Effects() != 1 {
		t.Fatalf("allowed: %v, %d effects", err, api.Effects())
	}
	res, err := tools.Invoke(ctx, e.Ledger, deny, call(a, "tool/0", args))
	if err != nil || !res.Replayed || api.Hits() != 1 {
		t.Fatalf("replay under a configuration that denies the host: %+v %v, %d hits; want it served", res, err, api.Hits())
	}
}

// Secret host headers are sent but never stored: not in the request hash,
// not in a result or error the downstream echoes them into.
func TestHTTPSecretHeadersNeverStored(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	const secret = "s3cr3t-t0ken-42"
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		status := http.StatusOK
		if r.URL.Path == "/bad" {
			status = http.StatusForbidden
		}
		w.WriteHeader(status)
		_, _ = fmt.Fprintf(w, `{"you_sent":%q}`, r.Header.Get("Authorization"))
	})
	tool, _ := e.http(tools.HTTPConfig{AllowedHosts: []string{hostOf(rec.URL)},
		HostHeaders: map[string]map[string]string{hostOf(rec.URL): {"authorization": "Bearer " + secret}}})
	task := e.task()
	args := fmt.Sprintf(`{"method":"POST","url":%q,"headers":{"X-Trace":"trace-77"},"body":{"a":1}}`, rec.URL+"/ok")
	res, err := tools.Invoke(ctx, e.Ledger, tool, call(task, "tool/0", args))
	if err != nil || strings.Contains(string(res.Body), secret) || !strings.Contains(string(res.Body), "[redacted]") {
		t.Fatalf("ok: %+v %v", res, err)
	}
	_, err = tools.Invoke(ctx, e.Ledger, tool, call(task, "tool/1", fmt.Sprintf(`{"method":"GET","url":%q}`, rec.URL+"/bad")))
	if !isPermanent(err) || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "403") {
		t.Fatalf("bad: %v", err)
	}
	reqs := rec.requests()
	if len(reqs) != 2 || reqs[0].header.Get("Authorization") != "Bearer "+secret || reqs[0].header.Get("X-Trace") != "trace-77" ||
		reqs[0].header.Get("Content-Type") != "application/json" || reqs[0].body != `{"a":1}` ||
		!strings.HasPrefix(reqs[0].header.Get("Idempotency-Key"), "al2-") {
		t.Fatalf("sent %+v", reqs)
	}
	if text := e.LedgerText(); strings.Contains(text, secret) || !strings.Contains(text, "[redacted]") {
		t.Fatalf("ledger holds the secret or lacks the results:\n%s", text)
	}
}

// unsafe_http sends no key; an outcome lost with the lease is never
// performed blindly: the next attempt needs an operator.
func TestUnsafeHTTPLostRecordNeedsAttention(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	rec := newRecorder(t, func(w http.ResponseWriter, _ *http.Request) {
		arrived <- struct{}{}
		<-release
		w.WriteHeader(http.StatusCreated)
	})
	_, unsafe := e.http(tools.HTTPConfig{UnsafeAllowedHosts: []string{hostOf(rec.URL)}})
	a := e.task()
	c := call(a, "tool/0", post(rec.URL))

	done := make(chan error, 1)
	go func() {
		_, err := tools.Invoke(ctx, e.Ledger, unsafe, c)
		done <- err
	}()
	<-arrived
	b := e.ExpireAndReclaim("b") // the lease ends while the request is in flight
	close(release)
	if err := <-done; !errors.Is(err, agentledger.ErrLeaseLost) {
		t.Fatalf("a: %v, want ErrLeaseLost", err)
	}
	c.Task = b
	if _, err := tools.Invoke(ctx, e.Ledger, unsafe, c); !errors.Is(err, agentledger.ErrNeedsAttention) {
		t.Fatalf("b: %v, want ErrNeedsAttention", err)
	}
	reqs := rec.requests()
	if len(reqs) != 1 || reqs[0].header.Get("Idempotency-Key") != "" {
		t.Fatalf("requests %+v", reqs)
	}
	j, err := e.Ledger.Journal(ctx, b.ID, b.Generation)
	if err != nil || len(j) != 1 || j[0].State != ledger.StateUnknown || j[0].Class != ledger.Unsafe {
		t.Fatalf("journal %+v %v", j, err)
	}
}

func TestHTTPResponseLimitsAndRedirects(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			_, _ = io.WriteString(w, strings.Repeat("x", 100))
		case "/text":
			_, _ = io.WriteString(w, "plain words")
		case "/moved":
			http.Redirect(w, r, "http://elsewhere.example.com/", http.StatusFound)
		}
	})
	tool, _ := e.http(tools.HTTPConfig{AllowedHosts: []string{hostOf(rec.URL)}, MaxResponseBytes: 50})
	task := e.task()
	get := func(step, path string) (ledger.Result, error) {
		return tools.Invoke(ctx, e.Ledger, tool, call(task, step, fmt.Sprintf(`{"method":"GET","url":%q}`, rec.URL+path)))
	}
	if res, err := get("tool/0", "/big"); !isPermanent(err) || !strings.Contains(err.Error(), "response larger than 50 bytes") || res.Status != 200 {
		t.Fatalf("big: %+v %v", res, err)
	}
	if res, err := get("tool/1", "/text"); err != nil || string(res.Body) != `"plain words"` {
		t.Fatalf("text: %+v %v", res, err)
	}
	if res, err := get("tool/2", "/moved"); !isPermanent(err) || res.Status != 302 || !strings.Contains(err.Error(), "not followed") {
		t.Fatalf("moved: %+v %v", res, err)
	}
	if n := len(rec.requests()); n != 3 {
		t.Fatalf("%d requests: a redirect was followed", n)
	}
}

func TestBuiltins(t *testing.T) {
	t.Parallel()
	list, err := tools.Builtins(tools.BuiltinConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range list {
		names = append(names, tool.Name())
		if tool.Description() == "" || !strings.HasPrefix(string(tool.Parameters()), `{"type":"object"`) {
			t.Errorf("%s: description or schema missing", tool.Name())
		}
	}
	if got := strings.Join(names, ","); got != "http_request,unsafe_http,create_task" {
		t.Fatalf("builtins %s", got)
	}
	for _, cfg := range []tools.HTTPConfig{
		{AllowedHosts: []string{"ftp://api.example.com"}},
		{AllowedHosts: []string{"https://api.example.com/v1"}},
		{AllowedHosts: []string{"*.example.com"}},
		{UnsafeAllowedHosts: []string{"api.example.com:99999"}},
		{HostHeaders: map[string]map[string]string{"api.example.com": {"Idempotency-Key": "x"}}},
		{Timeout: -time.Second},
	} {
		if _, err := tools.Builtins(tools.BuiltinConfig{HTTP: cfg}); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
}

// A timeout set for one origin bounds its calls, and how long a call
// holds its origin's concurrency slot; the others keep the tool's.
func TestHTTPTimeoutPerOrigin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	slow, fast := newDownstream(t), newDownstream(t)
	release := make(chan struct{})
	defer close(release)
	slow.SetDelay(func() time.Duration { <-release; return 0 }) // answers only once the test ends
	tool, _ := e.http(tools.HTTPConfig{AllowedHosts: []string{hostOf(slow.URL), hostOf(fast.URL)},
		Timeout: time.Minute, Timeouts: map[string]time.Duration{hostOf(slow.URL): 50 * time.Millisecond}})
	task := e.task()
	for _, c := range []struct {
		url  string
		hold time.Duration
	}{{slow.URL, 50 * time.Millisecond}, {fast.URL, time.Minute}} {
		eff, err := tool.Effect(call(task, "tool/0", post(c.url)))
		if err != nil || eff.Hold != c.hold {
			t.Fatalf("%s: holds its slot %s (%v), want %s", c.url, eff.Hold, err, c.hold)
		}
	}
	_, err := tools.Invoke(ctx, e.Ledger, tool, call(task, "tool/0", post(slow.URL)))
	if err == nil || isPermanent(err) || !strings.Contains(err.Error(), "within 50ms") {
		t.Fatalf("a call to the slow origin: %v, want no answer within its 50ms", err)
	}
	if res, err := tools.Invoke(ctx, e.Ledger, tool, call(task, "tool/1", post(fast.URL))); err != nil || res.Status != 201 {
		t.Fatalf("a call to the other origin: %+v %v", res, err)
	}
	for _, bad := range []map[string]time.Duration{{"ftp://api.example.com": time.Second}, {"api.example.com": 0}} {
		if _, err := tools.NewHTTPRequest(tools.HTTPConfig{AllowedHosts: []string{"api.example.com"}, Timeouts: bad}); err == nil {
			t.Errorf("timeouts %v accepted", bad)
		}
	}
}

// Unsent names the secret headers' origins the tool's allow-list lacks: a
// bare key is https, so it is never sent to a target allowed over http.
func TestHTTPUnsentHeaders(t *testing.T) {
	h, err := tools.NewHTTPRequest(tools.HTTPConfig{AllowedHosts: []string{"http://127.0.0.1:18699", "api.example.com"},
		HostHeaders: map[string]map[string]string{
			"127.0.0.1:18699":        {"Authorization": "Bearer a"}, // https: never sent
			"http://127.0.0.1:18699": {"Authorization": "Bearer b"},
			"api.example.com":        {"Authorization": "Bearer c"},
			"other.example.com":      {"Authorization": "Bearer d"},
		}})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(h.Unsent(), " "); got != "https://127.0.0.1:18699 https://other.example.com:443" {
		t.Fatalf("Unsent = %s", got)
	}
}
