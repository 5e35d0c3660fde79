package httpapi

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/tenants"
)

// errUnauthorized is the one answer to every failed authentication: which
// check failed (no header, another scheme, a malformed, unknown or revoked
// token) would help whoever guesses tokens, so it goes to the log only.
var errUnauthorized = agentledger.NewError(agentledger.CodeUnauthorized,
	"a valid API token is required: Authorization: Bearer <token>")

// errTooManyFailures answers an address that failed authentication too
// often, before any token is looked up.
var errTooManyFailures = agentledger.RetryAfter(agentledger.NewError(agentledger.CodeUnauthorized,
	"too many failed authentications from this address; try again later"), failureWindow)

// authenticate returns the tenant of the request's bearer token. Every
// failure matches tenants.ErrUnauthorized (401); none shows the token.
func (s *Server) authenticate(r *http.Request) (string, error) {
	token, err := BearerToken(r)
	if err != nil {
		return "", err
	}
	tenant, err := s.cfg.Tenants.Authenticate(r.Context(), token)
	if err != nil {
		return "", err
	}
	if tenant == "" { // an empty tenant would mean every tenant to claims
		return "", fmt.Errorf("token without a tenant: %w", tenants.ErrUnauthorized)
	}
	return tenant, nil
}

// BearerToken is the token of r's one Authorization header of the Bearer
// scheme, named in any case (RFC 7235); its errors match
// tenants.ErrUnauthorized and never show the header.
func BearerToken(r *http.Request) (string, error) {
	vs := r.Header.Values("Authorization")
	if len(vs) == 0 {
		return "", fmt.Errorf("no Authorization header: %w", tenants.ErrUnauthorized)
	}
	scheme, token, ok := strings.Cut(vs[0], " ")
	if len(vs) > 1 || !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", fmt.Errorf("the Authorization header is not one Bearer token: %w", tenants.ErrUnauthorized)
	}
	return strings.TrimSpace(token), nil
}

// tenantOf authenticates r, or answers it and returns false: a failure is
// the uniform 401 (its reason logged), an address over its failure budget
// a 401 with Retry-After before any look-up, a database error its problem.
func (s *Server) tenantOf(w http.ResponseWriter, r *http.Request) (string, bool) {
	addr := clientAddr(r, s.cfg.TrustedProxies)
	if !s.failures.allowed(addr) {
		s.fail(w, r, errTooManyFailures)
		return "", false
	}
	tenant, err := s.authenticate(r)
	switch {
	case errors.Is(err, tenants.ErrUnauthorized):
		s.authFailed(w, r, addr, err, errUnauthorized)
		return "", false
	case err != nil:
		s.fail(w, r, err)
		return "", false
	}
	return tenant, true
}

// Guard returns h behind check, a credential other than a tenant's token
// (the daemon's /metrics token) that shares the API's failed-authentication
// budget: an address over it is refused before check runs, as the API
// refuses it (401 with Retry-After), and every refusal of check counts
// against it and is a 401 whose detail is denied. check's error is logged,
// so it must not hold the credential.
func (s *Server) Guard(check func(*http.Request) error, denied string, h http.Handler) http.Handler {
	answer := agentledger.NewError(agentledger.CodeUnauthorized, denied)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		addr := clientAddr(r, s.cfg.TrustedProxies)
		if !s.failures.allowed(addr) {
			s.fail(w, r, errTooManyFailures)
			return
		}
		if err := check(r); err != nil {
			s.authFailed(w, r, addr, err, answer)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// authFailed counts a failed authentication from addr, logs its reason and
// answers it.
func (s *Server) authFailed(w http.ResponseWriter, r *http.Request, addr string, reason, answer error) {
	s.failures.failed(addr)
	attrs := []slog.Attr{slog.String("client", addr), slog.String("route", r.Pattern), slog.String("reason", reason.Error())}
	if peer := hostOf(r.RemoteAddr); peer != addr {
		attrs = append(attrs, slog.String("via", peer)) // the trusted proxy it came through
	}
	s.log.LogAttrs(r.Context(), slog.LevelInfo, "httpapi: authentication failed", attrs...)
	s.fail(w, r, answer)
}

// Failed authentications an address may make per failureWindow before it
// is refused without a look-up.
const (
	maxFailures   = 20
	failureWindow = time.Minute
)

// failureLimiter counts failed authentications per client address in
// fixed windows; it forgets an address once its window has passed.
type failureLimiter struct {
	mu     sync.Mutex
	now    func() time.Time
	counts map[string]*failureCount
}

type failureCount struct {
	n     int
	since time.Time
}

func (l *failureLimiter) allowed(addr string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.counts[addr]
	return c == nil || c.n < maxFailures || l.now().Sub(c.since) >= failureWindow
}

func (l *failureLimiter) failed(addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if l.counts == nil {
		l.counts = map[string]*failureCount{}
	}
	if len(l.counts) > 10_000 { // bound the memory an address scan can take
		for a, c := range l.counts {
			if now.Sub(c.since) >= failureWindow {
				delete(l.counts, a)
			}
		}
	}
	c := l.counts[addr]
	if c == nil || now.Sub(c.since) >= failureWindow {
		c = &failureCount{since: now}
		l.counts[addr] = c
	}
	c.n++
}
