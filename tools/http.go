package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/canonjson"
	"github.com/agentledger/agentledger/flow"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/ledger"
)

// The environment variables operators list allowed targets in; error
// messages name them.
const (
	AllowedHostsEnv       = "AGENTLEDGER_HTTP_ALLOWED_HOSTS"
	UnsafeAllowedHostsEnv = "AGENTLEDGER_UNSAFE_HTTP_ALLOWED_HOSTS"
)

// HTTP defaults applied to zero fields of HTTPConfig.
const (
	DefaultHTTPTimeout      = 30 * time.Second
	DefaultMaxRequestBytes  = 1 << 20
	DefaultMaxResponseBytes = 1 << 20
)

// HTTPConfig configures the http_request and unsafe_http tools. Hosts are
// origins: "https://host[:port]", "http://host[:port]" (sent in clear: only
// when written so), or "host[:port]", which means https. A port left out is
// the scheme's.
type HTTPConfig struct {
	// AllowedHosts are the targets http_request may call: services that
	// honour Idempotency-Key. Empty allows none.
	AllowedHosts []string
	// UnsafeAllowedHosts are the targets unsafe_http may call: services
	// with no idempotency support, which operators declare one by one.
	// Empty allows none.
	UnsafeAllowedHosts []string
	// Timeout bounds one request, reading the response included.
	Timeout time.Duration
	// Timeouts override Timeout for the origins they name (keys written as
	// AllowedHosts' entries): a slow service gets longer, and a call
	// holds its origin's concurrency slot that long at most.
	Timeouts map[string]time.Duration
	// MaxRequestBytes bounds the request body.
	MaxRequestBytes int64
	// MaxResponseBytes bounds a successful response body; a larger one is
	// a permanent error.
	MaxResponseBytes int64
	// Client sends the requests; nil uses http.DefaultTransport. Redirects
	// are never followed, whatever the client says.
	Client *http.Client
	// HostHeaders are secret headers (Authorization, API keys) per host,
	// added after the request is hashed: they are sent, and never stored,
	// logged or returned. Keys are written as hosts are: a bare host is
	// https, so secrets go over plain http only to an http:// key.
	HostHeaders map[string]map[string]string
}

// HTTPTool is the http_request tool or the unsafe_http tool.
type HTTPTool struct {
	name    string
	class   ledger.Class // of every method but GET
	env     string       // where the allowed hosts are configured
	allowed map[string]bool
	secrets map[string]http.Header
	// timeouts are HTTPConfig.Timeouts by origin.
	timeouts map[string]time.Duration
	cfg      HTTPConfig
	client   *http.Client
}

// NewHTTPRequest returns the http_request tool: a keyed effect that sends
// the ledger's downstream key as Idempotency-Key to cfg.AllowedHosts.
func NewHTTPRequest(cfg HTTPConfig) (*HTTPTool, error) {
	return newHTTPTool("http_request", ledger.Keyed, AllowedHostsEnv, cfg.AllowedHosts, cfg)
}

// NewUnsafeHTTP returns the unsafe_http tool for cfg.UnsafeAllowedHosts:
// no Idempotency-Key is sent, and an effect whose outcome is unknown is
// never performed again; the task waits for an operator instead.
func NewUnsafeHTTP(cfg HTTPConfig) (*HTTPTool, error) {
	return newHTTPTool("unsafe_http", ledger.Unsafe, UnsafeAllowedHostsEnv, cfg.UnsafeAllowedHosts, cfg)
}

func newHTTPTool(name string, class ledger.Class, env string, hosts []string, cfg HTTPConfig) (*HTTPTool, error) {
	if cfg.Timeout < 0 || cfg.MaxRequestBytes < 0 || cfg.MaxResponseBytes < 0 {
		return nil, fmt.Errorf("%s: timeout and size limits must not be negative", name)
	}
	cfg.Timeout = orDefault(cfg.Timeout, DefaultHTTPTimeout)
	cfg.MaxRequestBytes = orDefault(cfg.MaxRequestBytes, DefaultMaxRequestBytes)
	cfg.MaxResponseBytes = orDefault(cfg.MaxResponseBytes, DefaultMaxResponseBytes)
	t := &HTTPTool{name: name, class: class, env: env, cfg: cfg,
		allowed: map[string]bool{}, secrets: map[string]http.Header{}, timeouts: map[string]time.Duration{}}
	for _, h := range hosts {
		n, err := normHost(h)
		if err != nil {
			return nil, fmt.Errorf("%s: allowed hosts: %w", name, err)
		}
		t.allowed[n] = true
	}
	for h, d := range cfg.Timeouts {
		n, err := normHost(h)
		if err != nil {
			return nil, fmt.Errorf("%s: timeouts: %w", name, err)
		}
		if d <= 0 {
			return nil, fmt.Errorf("%s: the timeout of %s must be positive, not %s", name, h, d)
		}
		t.timeouts[n] = d
	}
	t.cfg.Timeouts = nil // kept in t.timeouts
	for h, hdrs := range cfg.HostHeaders {
		n, err := normHost(h)
		if err != nil {
			return nil, fmt.Errorf("%s: host headers: %w", name, err)
		}
		t.secrets[n] = http.Header{}
		for k, v := range hdrs {
			if err := checkHeader(k, v); err != nil {
				return nil, fmt.Errorf("%s: host headers of %s: %w", name, h, err)
			}
			t.secrets[n].Set(k, v)
		}
	}
	t.cfg.HostHeaders = nil // kept only in t.secrets
	c := http.Client{Transport: sharedTransport()}
	if cfg.Client != nil {
		c = *cfg.Client
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	t.client = &c
	return t, nil
}

// sharedTransport is the HTTP tools' transport unless HTTPConfig.Client is
// given: http.DefaultTransport's settings but an idle connection kept per
// running task (a worker's default concurrency) for each host, where the
// default's two would make most requests to a busy downstream open a new
// connection and leave the last one in TIME_WAIT.
var sharedTransport = sync.OnceValue(func() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 100
	t.MaxIdleConns = 200
	return t
})

func orDefault[T int64 | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// Name is "http_request" or "unsafe_http".
func (t *HTTPTool) Name() string { return t.name }

// Description tells the model what the tool does.
func (t *HTTPTool) Description() string {
	d := "Send one HTTP request to an allowed host and return its status and JSON body. "
	if t.class == ledger.Unsafe {
		return d + "For services without idempotency support: if the outcome is lost, an operator decides."
	}
	return d + "Retries are made safe with an Idempotency-Key."
}

// Parameters is the JSON Schema of the arguments. The method is matched
// in any case, as Effect reads it.
func (t *HTTPTool) Parameters() json.RawMessage {
	return json.RawMessage(`{"type":"object","additionalProperties":false,"required":["method","url"],"properties":{` +
		`"method":{"type":"string","pattern":"^(?i:GET|POST|PUT|PATCH|DELETE)$","description":"GET, POST, PUT, PATCH or DELETE"},` +
		`"url":{"type":"string","description":"absolute http or https URL on an allowed host"},` +
		`"headers":{"type":"object","additionalProperties":{"type":"string"}},` +
		`"body":{"description":"JSON request body"}}}`)
}

// httpArgs are the tool's arguments.
type httpArgs struct {
	Method  string            `json:"method"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    json.RawMessage   `json:"body,omitempty"`
}

// httpCall is a validated request, ready to send.
type httpCall struct {
	method, url, target string
	u                   *url.URL
	headers             http.Header
	secrets             http.Header
	body                []byte // canonical JSON; nil: no body
	denied              error  // the host is not allowed: refuse to perform
	timeout             time.Duration
}

// Reach is the request's target, for the tenant's grant.
func (t *HTTPTool) Reach(call Call) (grants.Need, error) {
	hc, err := t.parse(call.Args)
	if err != nil {
		return grants.Need{}, agentledger.Permanent(fmt.Errorf("%s: %w", t.name, err))
	}
	return grants.Need{URL: hc.u}, nil
}

// Effect validates the arguments and returns the request as an effect: GET
// is pure, every other method is of the tool's class. The ledger request
// is the canonical {method, url, headers, body}; secret host headers are
// not part of it. The body is sent in its canonical form, so a re-send
// carries the same bytes under the same Idempotency-Key. http_request
// sends the key with every method; unsafe_http never does.
func (t *HTTPTool) Effect(call Call) (ledger.Effect, error) {
	hc, err := t.parse(call.Args)
	if err != nil {
		return ledger.Effect{}, agentledger.Permanent(fmt.Errorf("%s: %w", t.name, err))
	}
	if call.Grant != nil && !call.Grant.SecretHeaders(hc.u) {
		hc.secrets = nil // the tenant's request goes out with its own headers only
	}
	req := map[string]any{"method": hc.method, "url": hc.url}
	if len(hc.headers) > 0 {
		h := map[string]string{}
		for k := range hc.headers {
			h[k] = hc.headers.Get(k)
		}
		req["headers"] = h
	}
	if hc.body != nil {
		req["body"] = json.RawMessage(hc.body)
	}
	request, err := canonjson.MarshalValue(req)
	if err != nil {
		return ledger.Effect{}, agentledger.Permanent(fmt.Errorf("%s: %w", t.name, err))
	}
	class := t.class
	if hc.method == http.MethodGet {
		class = ledger.Pure
	}
	perform := func(ctx context.Context, c ledger.Call) (ledger.Result, error) {
		if hc.denied != nil {
			return ledger.Result{}, ledger.NotPerformed(fmt.Errorf("%s: %w", t.name, hc.denied))
		}
		return t.send(ctx, c, hc)
	}
	eff := ledger.Effect{Operation: t.name, StepPath: call.StepPath, Class: class, Request: request, Perform: perform}
	if hc.denied == nil { // a host not allowed is refused, booking nothing
		eff.Target, eff.Hold = flow.HTTP(hc.u), hc.timeout
	}
	return eff, nil
}

func (t *HTTPTool) parse(raw json.RawMessage) (*httpCall, error) {
	var a httpArgs
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return nil, fmt.Errorf("arguments must be {\"method\", \"url\", \"headers\"?, \"body\"?}: %v", err)
	}
	hc := &httpCall{method: strings.ToUpper(a.Method), url: a.URL, headers: http.Header{}}
	u, err := a.target()
	if err != nil {
		return nil, err
	}
	hc.u = u
	origin := grants.Origin(u)
	// Refused when performing, not here: a replay serves an effect the
	// ledger completed whatever the configuration says now.
	hc.denied = t.Refusal(u)
	hc.target = u.Scheme + "://" + strings.ToLower(u.Host)
	hc.secrets = t.secrets[origin]
	hc.timeout = t.cfg.Timeout
	if d, ok := t.timeouts[origin]; ok {
		hc.timeout = d
	}
	for k, v := range a.Headers {
		if err := checkHeader(k, v); err != nil {
			return nil, err
		}
		ck := http.CanonicalHeaderKey(k)
		if _, dup := hc.headers[ck]; dup {
			return nil, fmt.Errorf("header %s is given twice", ck)
		}
		hc.headers.Set(ck, v)
	}
	if len(a.Body) > 0 && string(a.Body) != "null" {
		if hc.body, err = canonjson.Marshal(a.Body); err != nil {
			return nil, fmt.Errorf("body: %v", err)
		}
		if int64(len(hc.body)) > t.cfg.MaxRequestBytes {
			return nil, fmt.Errorf("request body larger than %d bytes", t.cfg.MaxRequestBytes)
		}
	}
	return hc, nil
}

// reserved headers are set by the transport or the ledger, never by args.
var reserved = map[string]bool{"Idempotency-Key": true, "Host": true, "Content-Length": true,
	"Transfer-Encoding": true, "Connection": true}

func checkHeader(k, v string) error {
	if k == "" || strings.IndexFunc(k, func(r rune) bool {
		return r > '~' || !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' ||
			strings.ContainsRune("!#$%&'*+-.^_`|~", r))
	}) >= 0 {
		return fmt.Errorf("header name %q is not a valid token", k)
	}
	if reserved[http.CanonicalHeaderKey(k)] {
		return fmt.Errorf("header %s is set by agentledger, not by the caller", http.CanonicalHeaderKey(k))
	}
	if strings.IndexFunc(v, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) >= 0 {
		return fmt.Errorf("header %s has a control character in its value", http.CanonicalHeaderKey(k))
	}
	return nil
}

// Unsent returns the origins of the secret headers (HTTPConfig.HostHeaders,
// normalised) that the tool never sends, its allow-list lacking them: a
// bare host's secrets go to https only, so an entry for a host the list
// allows over http only is one of them. Sorted.
func (t *HTTPTool) Unsent() []string {
	var out []string
	for origin := range t.secrets {
		if !t.allowed[origin] {
			out = append(out, origin)
		}
	}
	slices.Sort(out)
	return out
}

// Refusal is nil when the tool may call u's origin, else the error saying
// why not: the origin is not listed, or is listed for the other scheme
// only (a bare entry means https).
func (t *HTTPTool) Refusal(u *url.URL) error {
	origin := grants.Origin(u)
	if t.allowed[origin] {
		return nil
	}
	other := &url.URL{Scheme: "https", Host: u.Host}
	if strings.EqualFold(u.Scheme, "https") {
		other.Scheme = "http"
	}
	if t.allowed[grants.Origin(other)] {
		if other.Scheme == "https" {
			return fmt.Errorf("%s is not allowed: %s lists %s for https only (a bare entry means https); write http://%s in it to allow plain http",
				origin, t.env, u.Host, u.Host)
		}
		return fmt.Errorf("%s is not allowed: %s lists %s for plain http only; write %s (or https://%s) in it to allow https",
			origin, t.env, u.Host, u.Host, u.Host)
	}
	// Said so that a tenant reading it through the API knows the list is
	// the operator's, and an operator knows what to add it to.
	return fmt.Errorf("%s is not allowed: the daemon's %s does not list it", origin, t.env)
}

// CheckAllowedHost refuses an allow-list entry the HTTP tools would
// refuse, saying how to write one.
func CheckAllowedHost(entry string) error {
	_, err := normHost(entry)
	return err
}

// normHost normalises an allowed-host entry: "host" or "host:port",
// lower case, IPv6 in brackets only with a port.
func normHost(entry string) (string, error) {
	e := strings.TrimSpace(entry)
	if !strings.Contains(e, "://") {
		e = "https://" + e
	}
	u, err := grants.ParseHost(e)
	if err == nil {
		if p := u.Port(); p != "" {
			if n, perr := strconv.Atoi(p); perr != nil || n < 1 || n > 65535 {
				err = fmt.Errorf("bad port %q", p)
			}
		}
	}
	if err != nil || strings.Contains(e, "*") {
		return "", fmt.Errorf("host %q must be written host[:port] (https), https://host[:port], or http://host[:port] to send in clear", entry)
	}
	return grants.Origin(u), nil
}

// utf8Prefix cuts s to at most n bytes on a rune boundary.
func utf8Prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// target checks the method and the URL of a call, and returns the URL.
func (a *httpArgs) target() (*url.URL, error) {
	switch strings.ToUpper(a.Method) {
	case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
	default:
		return nil, fmt.Errorf("method %q is not one of GET, POST, PUT, PATCH, DELETE", a.Method)
	}
	u, err := url.Parse(a.URL)
	switch {
	case err != nil:
		return nil, fmt.Errorf("url: %v", err)
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("url %q must be absolute, with scheme http or https", a.URL)
	case u.Host == "" || u.Hostname() == "":
		return nil, fmt.Errorf("url %q has no host", a.URL)
	case u.User != nil:
		return nil, errors.New("url must not carry credentials: configure them as host headers")
	}
	return u, nil
}

// CheckHTTP checks args (known, not a template) of a call of the built-in
// HTTP tool name as the tool will when it runs — the method and the URL —
// so that a submitter is told at once of a call that can only fail. It
// checks nothing of other tools, and nothing the daemon's configuration
// decides (the allowed hosts). The JSON Schema has checked the shape.
func CheckHTTP(name string, args json.RawMessage) error {
	if (name != "http_request" && name != "unsafe_http") || args == nil {
		return nil
	}
	var a httpArgs
	if err := json.Unmarshal(args, &a); err != nil {
		return nil // the schema's to refuse
	}
	_, err := a.target()
	return err
}

// PureHTTP reports whether args (known, not a template) call the built-in
// HTTP tool name with GET: a read, whose effect is pure whatever the
// tool's class. A submitter can be told at once that a GET has nothing to
// undo.
func PureHTTP(name string, args json.RawMessage) bool {
	if (name != "http_request" && name != "unsafe_http") || args == nil {
		return false
	}
	var a struct {
		Method string `json:"method"`
	}
	return json.Unmarshal(args, &a) == nil && strings.EqualFold(a.Method, http.MethodGet)
}
