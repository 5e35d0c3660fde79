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
// in the result for the ledger.
func (t *HTTPTool) send(ctx context.Context, call ledger.Call, hc *httpCall) (ledger.Result, error) {
	rctx, cancel := context.WithTimeout(ctx, t.cfg.Timeout)
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
	resp, err := t.client.Do(req)
	if err != nil {
		if ctx.Err() == nil && errors.Is(rctx.Err(), context.DeadlineExceeded) {
			return ledger.Result{}, fmt.Errorf("%s: %s: %w within %s", t.name, what, errNoAnswer, t.cfg.Timeout)
		}
		return ledger.Result{}, fmt.Errorf("%s: %w", t.name, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, t.cfg.MaxResponseBytes+1))
	if err != nil {
		return ledger.Result{}, fmt.Errorf("%s: %s: reading the response: %w", t.name, what, err)
	}
	over := int64(len(data)) > t.cfg.MaxResponseBytes
	data = redact(data, hc.secrets)
	res := ledger.Result{Status: resp.StatusCode}
	if !over {
		res.Body = jsonBody(data)
	}
	code := resp.StatusCode
	switch {
	case code >= 200 && code < 300 && over:
		return res, agentledger.Permanent(fmt.Errorf("%s: %s: %s: response larger than %d bytes",
			t.name, what, resp.Status, t.cfg.MaxResponseBytes))
	case code >= 200 && code < 300:
		return res, nil
	case code == 408 || code == 425 || code == 429 || code >= 500:
		err := fmt.Errorf("%s: %s: %s%s", t.name, what, resp.Status, excerpt(data))
		if d, ok := retryAfter(resp.Header.Get("Retry-After")); ok && (code == 429 || code == 503) {
			return res, agentledger.RetryAfter(err, d)
		}
		return res, err
	case code >= 300 && code < 400:
		loc := string(redact([]byte(resp.Header.Get("Location")), hc.secrets))
		return res, agentledger.Permanent(fmt.Errorf("%s: %s: %s: redirect to %q not followed", t.name, what, resp.Status, loc))
	default:
		return res, agentledger.Permanent(fmt.Errorf("%s: %s: %s%s", t.name, what, resp.Status, excerpt(data)))
	}
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

// redact blanks secret header values a downstream echoed back, so they
// reach neither the ledger nor a log: the whole value, and the credential
// of an "<scheme> <credential>" value.
func redact(data []byte, secrets http.Header) []byte {
	for _, vs := range secrets {
		for _, v := range vs {
			parts := []string{v}
			if f := strings.Fields(v); len(f) == 2 {
				parts = append(parts, f[1])
			}
			for _, p := range parts {
				if len(p) >= 6 {
					data = bytes.ReplaceAll(data, []byte(p), []byte("[redacted]"))
				}
			}
		}
	}
	return data
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
