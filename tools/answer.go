package tools

import (
	"fmt"
	"net/http"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/ledger"
)

// Answer turns a downstream's HTTP answer into what a tool's Perform
// returns, classified as http_request classifies it: a 2xx is the result;
// 408, 425, 429 and 5xx are transient errors, so that the call is sent
// again under the same key (after the answer's Retry-After, for 429 and
// 503); any other status is a permanent error, and the task fails. Each
// answer's status and body stay in the result, for the ledger.
//
// Returning ledger.Result{Status: resp.StatusCode} with a nil error
// instead records whatever was answered as the effect's outcome: a 503
// would be completed, served on every replay, and never sent again.
func Answer(resp *http.Response, body []byte) (ledger.Result, error) {
	res := ledger.Result{Status: resp.StatusCode, Body: jsonBody(body)}
	code := resp.StatusCode
	if code >= 200 && code < 300 {
		return res, nil
	}
	status := resp.Status
	if status == "" {
		status = fmt.Sprintf("%d %s", code, http.StatusText(code))
	}
	if resp.Request != nil && resp.Request.URL != nil {
		status = resp.Request.Method + " " + resp.Request.URL.Redacted() + ": " + status
	}
	err := fmt.Errorf("%s%s", status, excerpt(body))
	if !transientStatus(code) {
		return res, agentledger.Permanent(err)
	}
	if d, ok := retryAfter(resp.Header.Get("Retry-After")); ok && (code == 429 || code == 503) {
		return res, agentledger.RetryAfter(err, d)
	}
	return res, err
}

// transientStatus is an answer that a later attempt may find otherwise:
// a timeout, too early, too many requests, or the server's fault.
func transientStatus(code int) bool { return code == 408 || code == 425 || code == 429 || code >= 500 }
