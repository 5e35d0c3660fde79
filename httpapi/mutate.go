package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"runtime/debug"
	"strings"
	"time"
)

// readFunc answers a route that changes nothing, for an authenticated
// tenant.
type readFunc func(r *http.Request, tenant string) reply

// mutation checks a mutating request — path, body, fields — before any
// Idempotency-Key record is written, and returns the action that performs
// it. Its errors are the client's (4xx): nothing is stored for them.
type mutation func(r *http.Request, tenant string, body []byte) (action, error)

// action performs a checked mutation. submissionKey is what makes its effect
// exactly-once under the request's Idempotency-Key (see
// heldKey.submissionKey); "" when the request has none.
type action func(ctx context.Context, submissionKey string) reply

// finishTimeout bounds storing or releasing a key record after the action,
// which runs even when the client has gone.
const finishTimeout = 10 * time.Second

// read wraps a readFunc with authentication.
func (s *Server) read(fn readFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tenant, ok := s.tenantOf(w, r)
		if !ok {
			return
		}
		fn(r, tenant).write(w)
	})
}

// mutate wraps a mutation with authentication and the Idempotency-Key
// protocol; operation (method and route pattern) scopes the keys with the
// tenant.
//
// Everything that can refuse the request runs before a record is written:
// the token, the key's syntax, the body (size, media type, JSON) and the
// mutation's own checks. Then the record decides: a new key runs the
// action; a completed one replays its answer; one in flight answers 409;
// one whose holder is gone is taken over and runs again.
func (s *Server) mutate(operation string, m mutation) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tenant, ok := s.tenantOf(w, r)
		if !ok {
			return
		}
		req, act, err := s.check(r, tenant, operation, m)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if req.key == "" {
			act(r.Context(), "").write(w)
			return
		}
		s.once(w, r, req, act)
	})
}

// check runs, for an authenticated tenant, every check that can refuse a
// mutating request: the key's syntax, the body (size, media type, JSON)
// and the mutation's own. It returns the key record the request asks for
// (key "" when it has none) and the checked action. Its errors are the
// client's (4xx), and nothing is stored for them.
func (s *Server) check(r *http.Request, tenant, operation string, m mutation) (keyRequest, action, error) {
	key, err := parseKey(r.Header)
	if err == nil && key == "" && !s.cfg.IdempotencyKeyOptional {
		err = errKeyMissing
	}
	if err != nil {
		return keyRequest{}, nil, err
	}
	body, err := readBody(r)
	if err != nil {
		return keyRequest{}, nil, err
	}
	fp, err := fingerprint(r.Method, r.URL.Path, body)
	if err != nil {
		return keyRequest{}, nil, err
	}
	act, err := m(r, tenant, body)
	if err != nil {
		return keyRequest{}, nil, err
	}
	return keyRequest{tenant: tenant, operation: operation, key: key, fingerprint: fp}, act, nil
}

// once runs act at most once per completed key record and answers.
func (s *Server) once(w http.ResponseWriter, r *http.Request, req keyRequest, act action) {
	held, stored, err := s.keys.acquire(r.Context(), req)
	switch {
	case err != nil:
		s.fail(w, r, err)
		return
	case stored != nil:
		stored.header.Set(ReplayedHeader, "true")
		stored.write(w)
		return
	}

	rp := s.run(r, held, act)

	fctx, fcancel := context.WithTimeout(context.WithoutCancel(r.Context()), finishTimeout)
	defer fcancel()
	var ours bool
	switch {
	case rp.refused:
		ours, err = s.keys.forget(fctx, held)
	case storable(rp.status):
		ours, err = s.keys.complete(fctx, held, rp)
	default:
		ours, err = s.keys.release(fctx, held)
	}
	switch {
	case err != nil:
		// The record stays in flight until its lock runs out; then the
		// client's retry takes it over (and finds the task it made).
		s.log.WarnContext(r.Context(), "httpapi: idempotency record left in flight", "route", r.Pattern,
			"tenant", req.tenant, "status", rp.status, "err", err)
	case !ours:
		s.log.WarnContext(r.Context(), "httpapi: idempotency record lost before the answer was stored",
			"route", r.Pattern, "tenant", req.tenant, "status", rp.status, "takeover", held.takeover)
	}
	rp.write(w)
}

// run performs act for the holder of a key. The action may not outlive
// the lock (past it, another request may take the key over), and a panic
// becomes a 500, so that the key is released like after any server error.
func (s *Server) run(r *http.Request, held *heldKey, act action) (rp reply) {
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.InFlightLease)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			s.log.ErrorContext(r.Context(), "httpapi: panic", "method", r.Method, "route", r.Pattern,
				"panic", p, "stack", string(debug.Stack()))
			rp = s.problemReply(r, fmt.Errorf("panic: %v", p))
		}
	}()
	return act(ctx, held.submissionKey())
}

// storable reports whether an answer is kept for replay: every 2xx (the
// effect happened) and every 4xx the action decided — a 404 or 409 is the
// answer to this request at the time it ran, and a retry must not act on
// a later state (the retried cancel of a task that had finished must not
// cancel the run an operator started since). Not kept: 408 and 429, which
// say "try again", and every 5xx, whose outcome may be unknown. Those
// release the record instead of deleting it: the retry runs again at once
// under the same record, hence the same submission key, so an enqueue that
// committed before the failure is found, not repeated.
func storable(status int) bool {
	switch {
	case status == http.StatusRequestTimeout, status == http.StatusTooManyRequests:
		return false
	case status >= 200 && status < 500:
		return true
	}
	return false
}

// readBody reads the request body (limited by Config.MaxBody) and checks
// its media type.
func readBody(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(r.Body)
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return nil, fmt.Errorf("%w: the limit is %d bytes", errBodyTooLarge, tooLarge.Limit)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: reading the body: %v", errMalformed, err)
	}
	if ct := r.Header.Get("Content-Type"); len(body) > 0 && ct != "" {
		mt, params, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return nil, fmt.Errorf("%w, not %q", errMediaType, ct)
		}
		// JSON is UTF-8 (RFC 8259): a body said to be in another charset
		// is not read as if it were.
		if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") && !strings.EqualFold(cs, "utf8") {
			return nil, fmt.Errorf("%w in UTF-8, not %q", errMediaType, ct)
		}
	}
	return body, nil
}
