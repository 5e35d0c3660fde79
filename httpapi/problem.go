package httpapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/dbaway"
	"github.com/agentledger/agentledger/problem"
)

// Problem is an error answer, sent as application/problem+json (RFC 9457):
// see package problem.
type Problem = problem.Problem

// ProblemType is the prefix of every Problem.Type: the code follows it.
const ProblemType = problem.TypePrefix

// Errors of the HTTP layer, in the vocabulary of the domain root.
var (
	errKeyMissing    = agentledger.NewError(agentledger.CodeIdempotencyKeyMissing, "Idempotency-Key is required on this route")
	errKeyInvalid    = agentledger.NewError(agentledger.CodeIdempotencyKeyInvalid, "Idempotency-Key must be 1-255 printable ASCII characters, bare or as a quoted string")
	errKeyDuplicated = agentledger.NewError(agentledger.CodeIdempotencyKeyDuplicated, "Idempotency-Key must be given once, with one key")
	errKeyReused     = agentledger.NewError(agentledger.CodeIdempotencyKeyReused, "Idempotency-Key was used for a different request")
	errKeyInFlight   = agentledger.NewError(agentledger.CodeIdempotencyKeyInFlight, "a request with this Idempotency-Key is still in flight")
	errBodyTooLarge  = agentledger.NewError(agentledger.CodeBodyTooLarge, "request body too large")
	errMediaType     = agentledger.NewError(agentledger.CodeUnsupportedMediaType, "request body must be application/json")
	errMalformed     = agentledger.NewError(agentledger.CodeMalformedRequest, "malformed request")
	errBadParameter  = agentledger.NewError(agentledger.CodeInvalidParameter, "invalid query parameter")
	errNoRoute       = agentledger.NewError(agentledger.CodeRouteNotFound, "no such route")
	errNoMethod      = agentledger.NewError(agentledger.CodeMethodNotAllowed, "method not allowed on this route")
	errDatabaseAway  = agentledger.NewError(agentledger.CodeUnavailable, "the database is unavailable for now (restarting or failing over); try again")
	errRaced         = agentledger.NewError(agentledger.CodeUnavailable, "the request raced another change to the same task and was not stored; try again")
)

// problemOf maps err to its Problem.
func problemOf(err error) Problem { return problem.Of(err) }

// problemReply is the answer for err, logged when it is the server's fault.
func (s *Server) problemReply(r *http.Request, err error) reply {
	cause := err
	switch {
	case dbaway.Conflict(err): // a race the store's own tries did not settle: nothing was stored
		err = agentledger.RetryAfter(errRaced, time.Second)
	case dbaway.Unavailable(err): // a restart or a failover: the client's retry (same key) resolves it
		err = agentledger.RetryAfter(errDatabaseAway, time.Second)
	}
	p := problemOf(err)
	switch {
	case errors.Is(err, context.Canceled): // the client went away, or a shutdown cut the request off
		s.log.InfoContext(r.Context(), "httpapi: request cancelled", "method", r.Method, "route", r.Pattern)
	case p.Status >= 500:
		s.log.ErrorContext(r.Context(), "httpapi: request failed", "method", r.Method, "route", r.Pattern,
			"status", p.Status, "err", cause)
	}
	return reply{status: p.Status, header: problem.Header(err, p), body: problem.Body(p)}
}

// fail writes the answer for err.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	s.problemReply(r, err).write(w)
}
