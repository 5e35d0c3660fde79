package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/tenants"
)

// Problem is an error answer, sent as application/problem+json (RFC 9457).
// Code is the stable, machine-readable name of the problem; Type is the
// same as a URI.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	Code   string `json:"code"`
	// Field names the request field or parameter at fault, for invalid input.
	Field string `json:"field,omitempty"`
}

// ProblemType is the prefix of every Problem.Type: the code follows it.
const ProblemType = "urn:agentledger:problem:"

// Errors of the HTTP layer. Each is matched in problems.
var (
	errKeyMissing    = errors.New("Idempotency-Key is required on this route")
	errKeyInvalid    = errors.New("Idempotency-Key must be 1-255 printable ASCII characters, bare or as a quoted string")
	errKeyDuplicated = errors.New("Idempotency-Key must be given once, with one key")
	errKeyReused     = errors.New("Idempotency-Key was used for a different request")
	errKeyInFlight   = errors.New("a request with this Idempotency-Key is still in flight")
	errBodyTooLarge  = errors.New("request body too large")
	errMediaType     = errors.New("request body must be application/json")
	errMalformed     = errors.New("malformed request")
	errBadParameter  = errors.New("invalid query parameter")
	errNoRoute       = errors.New("no such route")
	errNoMethod      = errors.New("method not allowed on this route")
)

// problems is the one table that maps errors to answers: the first entry
// the error matches (errors.Is) decides. An error that matches none is a
// 500. The detail of a 4xx is the error's message (none shows a token or
// an Idempotency-Key); a 5xx's cause is logged, not sent.
var problems = []struct {
	err    error
	status int
	code   string
	title  string
}{
	{errKeyMissing, http.StatusBadRequest, "idempotency_key_missing", "Idempotency-Key missing"},
	{errKeyInvalid, http.StatusBadRequest, "idempotency_key_invalid", "Idempotency-Key invalid"},
	{errKeyDuplicated, http.StatusBadRequest, "idempotency_key_duplicated", "Idempotency-Key given more than once"},
	{errKeyReused, http.StatusUnprocessableEntity, "idempotency_key_reused", "Idempotency-Key reused"},
	{errKeyInFlight, http.StatusConflict, "idempotency_key_in_flight", "Request in flight"},
	{tenants.ErrUnauthorized, http.StatusUnauthorized, "unauthorized", "Unauthorized"},
	{errBodyTooLarge, http.StatusRequestEntityTooLarge, "body_too_large", "Request body too large"},
	{errMediaType, http.StatusUnsupportedMediaType, "unsupported_media_type", "Unsupported media type"},
	{errMalformed, http.StatusBadRequest, "malformed_request", "Malformed request"},
	{errBadParameter, http.StatusBadRequest, "invalid_parameter", "Invalid query parameter"},
	{errNoRoute, http.StatusNotFound, "route_not_found", "Not found"},
	{errNoMethod, http.StatusMethodNotAllowed, "method_not_allowed", "Method not allowed"},
	{agentledger.ErrKeyReuse, http.StatusUnprocessableEntity, "submission_key_reused", "Submission key reused"},
	{agentledger.ErrInvalid, http.StatusUnprocessableEntity, "invalid_request", "Invalid request"},
	{agentledger.ErrNotFound, http.StatusNotFound, "not_found", "Not found"},
	{agentledger.ErrConflict, http.StatusConflict, "conflict", "Conflict"},
	{context.DeadlineExceeded, http.StatusServiceUnavailable, "timeout", "Timed out"},
	{context.Canceled, http.StatusServiceUnavailable, "cancelled", "Request cancelled"},
}

// problemOf maps err to its Problem through the table.
func problemOf(err error) Problem {
	p := Problem{Status: http.StatusInternalServerError, Code: "internal", Title: "Internal server error",
		Detail: "the server failed to answer; the request may be retried (with the same Idempotency-Key)"}
	for _, e := range problems {
		if errors.Is(err, e.err) {
			p.Status, p.Code, p.Title = e.status, e.code, e.title
			if p.Status < 500 { // a server error's cause stays in the log
				p.Detail = err.Error()
			}
			break
		}
	}
	p.Type = ProblemType + p.Code
	var ie *agentledger.InvalidError
	if p.Status < 500 && errors.As(err, &ie) {
		p.Field = ie.Field
	}
	return p
}

// problemReply is the answer for err, logged when it is the server's fault.
func (s *Server) problemReply(r *http.Request, err error) reply {
	p := problemOf(err)
	switch {
	case errors.Is(err, context.Canceled): // the client went away, or a shutdown cut the request off
		s.log.InfoContext(r.Context(), "httpapi: request cancelled", "method", r.Method, "route", r.Pattern)
	case p.Status >= 500:
		s.log.ErrorContext(r.Context(), "httpapi: request failed", "method", r.Method, "route", r.Pattern,
			"status", p.Status, "err", err)
	}
	body, _ := json.Marshal(p) // a Problem always encodes
	h := http.Header{"Content-Type": {"application/problem+json"}}
	var ra *agentledger.RetryAfterError
	if errors.As(err, &ra) {
		h.Set("Retry-After", strconv.Itoa(int(math.Ceil(max(ra.After.Seconds(), 1)))))
	}
	if p.Status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Bearer realm="agentledger"`)
	}
	return reply{status: p.Status, header: h, body: append(body, '\n')}
}

// fail writes the answer for err.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	s.problemReply(r, err).write(w)
}
