package slackfake

import (
	"net/http"
	"strconv"
)

// Fault is a scripted misbehaviour for one call of a method.
type Fault struct {
	// Status, when not 0, answers with this HTTP status (429, 500, 503…).
	Status int
	// RetryAfter, when positive, is sent as the Retry-After header, in
	// seconds.
	RetryAfter int
	// Error, when set, answers ok:false with this Slack error code (e.g.
	// "fatal_error").
	Error string
	// Drop closes the connection without answering.
	Drop bool
	// Apply lets the call take effect first (the message is stored or
	// updated) and only then misbehaves: Slack accepted it, but the
	// caller cannot know.
	Apply bool
	// EchoAuth appends the token the call carried to the error code, as a
	// careless server might: for proving that clients keep it out of their
	// errors and logs.
	EchoAuth bool
}

// Inject queues faults for the next calls of method (e.g.
// "chat.postMessage"), one call each, in order.
func (s *Server) Inject(method string, faults ...Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[method] = append(s.faults[method], faults...)
}

// RateLimit answers the next call of method with 429 and Retry-After.
func (s *Server) RateLimit(method string, retryAfter int) {
	s.Inject(method, Fault{Status: http.StatusTooManyRequests, RetryAfter: retryAfter})
}

// DropAfterApply lets the next call of method take effect, then closes the
// connection without answering.
func (s *Server) DropAfterApply(method string) { s.Inject(method, Fault{Apply: true, Drop: true}) }

// FailNext answers the next call of method with the Slack error code,
// without letting it take effect.
func (s *Server) FailNext(method, code string) { s.Inject(method, Fault{Error: code}) }

// popFault takes the next fault of method; it needs s.mu.
func (s *Server) popFault(method string) (Fault, bool) {
	q := s.faults[method]
	if len(q) == 0 {
		return Fault{}, false
	}
	s.faults[method] = q[1:]
	return q[0], true
}

// misbehave answers w as f says.
func misbehave(w http.ResponseWriter, f Fault, token string) {
	if f.Drop {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			_ = conn.Close()
			return
		}
		// No hijacking (HTTP/2): the closest is an aborted handler.
		panic(http.ErrAbortHandler)
	}
	if f.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(f.RetryAfter))
	}
	code := f.Error
	if code == "" {
		code = "ratelimited"
		if f.Status != http.StatusTooManyRequests {
			code = "internal_error"
		}
	}
	if f.EchoAuth {
		code += " (token " + token + ")"
	}
	status := f.Status
	if status == 0 {
		status = http.StatusOK
	}
	writeJSON(w, status, map[string]any{"ok": false, "error": code})
}
