package demo

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
)

// Server is the demo's downstream API. It is safe for concurrent use.
type Server struct {
	mu      sync.Mutex
	charges map[string]json.RawMessage // Idempotency-Key → the charge answered
	flaky   map[string]int             // Idempotency-Key → calls so far
	legacy  int                        // calls so far
	calls   int                        // requests to the charge endpoints
}

// NewServer returns the demo API.
func NewServer() *Server {
	return &Server{charges: map[string]json.RawMessage{}, flaky: map[string]int{}}
}

// Routes are the demo's routes, for an http.ServeMux-style Handle.
func (s *Server) Routes() map[string]http.Handler {
	return map[string]http.Handler{
		"POST /demo/charges": http.HandlerFunc(s.charge),
		"POST /demo/flaky":   http.HandlerFunc(s.flakyCharge),
		"POST /demo/legacy":  http.HandlerFunc(s.legacyCall),
		"GET /demo/charges":  http.HandlerFunc(s.count),
	}
}

// charge creates a charge once per Idempotency-Key, as a payments API
// does: a retry with the key gets the same charge.
func (s *Server) charge(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	if key == "" {
		http.Error(w, `{"error":"Idempotency-Key required"}`, http.StatusBadRequest)
		return
	}
	var body struct {
		Order  int `json:"order"`
		Amount int `json:"amount"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&body); err != nil {
		http.Error(w, `{"error":"body must be {\"order\", \"amount\"}"}`, http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.calls++
	ch, seen := s.charges[key]
	if !seen {
		ch, _ = json.Marshal(map[string]any{"id": fmt.Sprintf("ch_%d", len(s.charges)+1), "order": body.Order,
			"amount": body.Amount, "status": "succeeded"})
		s.charges[key] = ch
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if seen {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(ch)
}

// flakyCharge answers 503 to the first two calls of a key, then charges.
func (s *Server) flakyCharge(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	s.mu.Lock()
	s.flaky[key]++
	n := s.flaky[key]
	if n <= 2 {
		s.calls++
	}
	s.mu.Unlock()
	if n <= 2 {
		http.Error(w, `{"error":"payments backend unavailable, try again"}`, http.StatusServiceUnavailable)
		return
	}
	s.charge(w, r)
}

// legacyCall takes no Idempotency-Key; its first call fails with 502 after
// (perhaps) doing its work, so the caller cannot know whether it did.
func (s *Server) legacyCall(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	s.legacy++
	n := s.legacy
	s.mu.Unlock()
	if n == 1 {
		http.Error(w, `{"error":"upstream timed out"}`, http.StatusBadGateway)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"synced":true}`))
}

// count answers how many charges were made and how many requests the
// charge endpoints served: a replay served from the ledger changes neither.
func (s *Server) count(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	body, _ := json.Marshal(map[string]int{"charges": len(s.charges), "requests": s.calls})
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(body, '\n'))
}
