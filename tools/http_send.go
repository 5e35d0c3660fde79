package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/tracing"
)

// MaxRetryAfter caps the delay a downstream's Retry-After may impose.
const MaxRetryAfter = time.Hour

// send performs the request and classifies the answer: 2xx is the result;
// 408, 425, 429, 5xx, timeouts and connection errors are transient (429
// and 503 with Retry-After as agentledger.RetryAfter); redirects, other
// 4xx and oversized answers are permanent, with the status and body kept
// in the result for the ledger. For a call that carried secret headers,
// nothing of the answer leaves here (result, error, Location, reason
// phrase) before a redactor has searched it for them.
func (t *HTTPTool) send(ctx context.Context, call ledger.Call, hc *httpCall) (ledger.Result, error) {
	rctx, cancel := context.WithTimeout(ctx, hc.timeout)
	defer cancel()
	var body io.Reader
	if hc.body != nil {
		body = bytes.NewReader(hc.body)
	}
	req, err := http.NewRequestWithContext(rctx, hc.method, hc.url, body)
	if err != nil {
		return ledger.Result{}, agentledger.Permanent(fmt.Errorf("%s: %v", t.name, err))
	}
	tracing.Inject(ctx, req.Header) // the attempt's trace goes on downstream; a header the call names wins
	for k, v := range hc.headers {
		req.Header[k] = v
	}
	if hc.body != nil && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if t.class == ledger.Keyed {
		req.Header.Set("Idempotency-Key", call.DownstreamKey(hc.target))
	}
	for k, v := range hc.secrets { // after hashing: never in the ledger
		req.Header[k] = v
	}
	what := hc.method + " " + hc.url
	var r *redactor // the call carried secrets: its answer is searched for them
	if len(hc.secrets) > 0 {
		r = newRedactor(hc.secrets)
	}
	resp, err := t.client.Do(req)
	if err != nil {
		if ctx.Err() == nil && errors.Is(rctx.Err(), context.DeadlineExceeded) {
			return ledger.Result{}, fmt.Errorf("%s: %s: %w within %s", t.name, what, errNoAnswer, hc.timeout)
		}
		if r != nil && r.tainted(err.Error()) { // the transport quotes a malformed answer
			return ledger.Result{}, fmt.Errorf("%s: %s: the answer could not be read, and its error is not shown: it held a secret header's value", t.name, what)
		}
		return ledger.Result{}, fmt.Errorf("%s: %w", t.name, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, t.cfg.MaxResponseBytes+1))
	if err != nil {
		if r != nil && r.tainted(err.Error()) {
			return ledger.Result{}, fmt.Errorf("%s: %s: reading the response failed, and its error is not shown: it held a secret header's value", t.name, what)
		}
		return ledger.Result{}, fmt.Errorf("%s: %s: reading the response: %w", t.name, what, err)
	}
	over := int64(len(data)) > t.cfg.MaxResponseBytes
	code := resp.StatusCode
	loc := resp.Header.Get("Location")
	if r != nil {
		if over {
			data = nil // cut at the limit, maybe through a secret: not quoted
		} else {
			data = r.body(data, encodedBody(resp))
		}
		loc = r.text(loc, redacted)
	}
	res := ledger.Result{Status: code}
	if !over {
		res.Body = jsonBody(data)
	}
	// answer is an error that quotes the answer. For a call that carried
	// secrets it is searched again as written: quoting and excerpting
	// re-write the answer's text, and the reason phrase is the
	// downstream's.
	answer := func(format string, args ...any) error {
		err := fmt.Errorf(format, args...)
		if r != nil && r.tainted(err.Error()) {
			err = fmt.Errorf("%s: %s: %d %s: the answer is not shown: it held a secret header's value",
				t.name, what, code, http.StatusText(code))
		}
		return err
	}
	switch {
	case code >= 200 && code < 300 && over:
		return res, agentledger.Permanent(answer("%s: %s: %s: response larger than %d bytes",
			t.name, what, resp.Status, t.cfg.MaxResponseBytes))
	case code >= 200 && code < 300:
		return res, nil
	case transientStatus(code):
		err := answer("%s: %s: %s%s", t.name, what, resp.Status, excerpt(data))
		if d, ok := retryAfter(resp.Header.Get("Retry-After")); ok && (code == 429 || code == 503) {
			return res, agentledger.RetryAfter(err, d)
		}
		return res, err
	case code >= 300 && code < 400:
		return res, agentledger.Permanent(answer("%s: %s: %s: redirect to %q not followed", t.name, what, resp.Status, loc))
	default:
		return res, agentledger.Permanent(answer("%s: %s: %s%s", t.name, what, resp.Status, excerpt(data)))
	}
}

// encodedBody reports whether resp's body is still content-encoded
// (compressed at the caller's request), so not readable as text.
func encodedBody(resp *http.Response) bool {
	ce := resp.Header.Get("Content-Encoding")
	return !resp.Uncompressed && ce != "" && !strings.EqualFold(ce, "identity")
}

// jsonBody is a response body as a JSON value: itself if it is JSON, else
// a JSON string; nil when empty.
func jsonBody(data []byte) json.RawMessage {
	switch {
	case len(bytes.TrimSpace(data)) == 0:
		return nil
	case json.Valid(data):
		return bytes.Clone(data)
	}
	b, _ := json.Marshal(string(data)) // a string always encodes
	return b
}

// excerpt is the start of a body for an error message.
func excerpt(data []byte) string {
	s := strings.Join(strings.Fields(strings.ToValidUTF8(string(data), "")), " ")
	if s == "" {
		return ""
	}
	return ": " + utf8Prefix(s, 200)
}

// retryAfter parses a Retry-After value: seconds or an HTTP date, capped
// at MaxRetryAfter.
func retryAfter(v string) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	var d time.Duration
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
		d = time.Duration(min(n, int64(MaxRetryAfter/time.Second))) * time.Second
	} else if at, err := http.ParseTime(v); err == nil {
		d = max(time.Until(at), 0)
	} else {
		return 0, false
	}
	return min(d, MaxRetryAfter), true
}
