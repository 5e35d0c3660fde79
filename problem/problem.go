// Package problem answers errors over HTTP as RFC 9457 problem details
// (application/problem+json), from the error vocabulary of the domain root
// (agentledger.Code): the HTTP API and the webhook receiver both answer
// through it, so an error reads the same wherever it comes from.
package problem

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"

	"github.com/agentledger/agentledger"
)

// TypePrefix starts every Problem.Type: the code follows it.
const TypePrefix = "urn:agentledger:problem:"

// Problem is an error answer. Code is the stable, machine-readable name of
// the problem; Type is the same as a URI.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	Code   string `json:"code"`
	// Field names the request field or parameter at fault, for invalid input.
	Field string `json:"field,omitempty"`
}

// internalDetail is what a 5xx says instead of its cause, which is logged.
const internalDetail = "the server failed to answer; the request may be retried (with the same Idempotency-Key)"

// Of is the answer for err: its kind's status, title and code; for a 4xx
// the error's message as the detail (no message carries a secret), for a
// 5xx a generic detail.
func Of(err error) Problem {
	k := agentledger.KindOf(err)
	p := Problem{Type: TypePrefix + string(k.Code), Title: k.Title, Status: k.Status, Code: string(k.Code)}
	if p.Status >= 500 {
		// A server error's cause stays in the log, unless the error was
		// written for the client.
		p.Detail = internalDetail
		var ce *agentledger.CodedError
		if errors.As(err, &ce) {
			p.Detail = ce.Msg
		}
		return p
	}
	p.Detail = err.Error()
	var ie *agentledger.InvalidError
	if errors.As(err, &ie) {
		p.Field = ie.Field
	}
	return p
}

// Header is the answer's header for err: the media type, Retry-After when
// err asks for one, a Bearer challenge with a 401.
func Header(err error, p Problem) http.Header {
	h := http.Header{"Content-Type": {"application/problem+json"}}
	var ra *agentledger.RetryAfterError
	if errors.As(err, &ra) {
		h.Set("Retry-After", strconv.Itoa(int(math.Ceil(max(ra.After.Seconds(), 1)))))
	}
	if p.Status == http.StatusUnauthorized && p.Code == string(agentledger.CodeUnauthorized) {
		h.Set("WWW-Authenticate", `Bearer realm="agentledger"`)
	}
	return h
}

// Body is p as the answer's body.
func Body(p Problem) []byte {
	// Not HTML: "<token>" stays as written, not \u003ctoken\u003e.
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(p) // a Problem always encodes; Encode ends the line
	return b.Bytes()
}

// Write answers err on w.
func Write(w http.ResponseWriter, err error) Problem {
	p := Of(err)
	for k, v := range Header(err, p) {
		w.Header()[k] = v
	}
	w.WriteHeader(p.Status)
	_, _ = w.Write(Body(p))
	return p
}
