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
	amounts map[string]int             // charge id → its amount
	refunds map[string]json.RawMessage // Idempotency-Key → the refund answered
	// refunded: charge id → its refund's id; a charge is refunded once.
	refunded map[string]string
	flaky    map[string]int // Idempotency-Key → calls so far
	legacy   int            // calls so far
	calls    int            // requests to the charge and refund endpoints

	reservations map[string]json.RawMessage // Idempotency-Key → the reservation answered
	held         map[string]bool            // reservation id → not released yet
	releases     map[string]json.RawMessage // Idempotency-Key → the release answered
	stockCalls   int                        // requests to the reservation endpoints
}

// NewServer returns the demo API.
func NewServer() *Server {
	return &Server{charges: map[string]json.RawMessage{}, amounts: map[string]int{}, refunds: map[string]json.RawMessage{},
		refunded: map[string]string{}, flaky: map[string]int{}, reservations: map[string]json.RawMessage{},
		held: map[string]bool{}, releases: map[string]json.RawMessage{}}
}

// Routes are the demo's routes, for an http.ServeMux-style Handle.
func (s *Server) Routes() map[string]http.Handler {
	return map[string]http.Handler{
		"POST /demo/charges":                   http.HandlerFunc(s.charge),
		"POST /demo/charges/{id}/refund":       http.HandlerFunc(s.refund),
		"POST /demo/flaky":                     http.HandlerFunc(s.flakyCharge),
		"POST /demo/legacy":                    http.HandlerFunc(s.legacyCall),
		"GET /demo/charges":                    http.HandlerFunc(s.count),
		"POST /demo/reservations":              http.HandlerFunc(s.reserve),
		"POST /demo/reservations/{id}/release": http.HandlerFunc(s.release),
		"GET /demo/reservations":               http.HandlerFunc(s.countReservations),
		"POST /demo/shipments":                 http.HandlerFunc(s.ship),
	}
}

// charge creates a charge once per Idempotency-Key, as a payments API
// does: a retry with the key gets the same charge.
func (s *Server) charge(w http.ResponseWriter, r *http.Request) {
	key, ok := idempotencyKey(w, r)
	if !ok {
		return
	}
	var body struct {
		Order  int `json:"order"`
		Amount int `json:"amount"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&body); err != nil {
		fail(w, http.StatusBadRequest, `body must be {"order", "amount"}`)
		return
	}
	s.mu.Lock()
	s.calls++
	ch, seen := s.charges[key]
	if !seen {
		id := fmt.Sprintf("ch_%d", len(s.charges)+1)
		ch, _ = json.Marshal(map[string]any{"id": id, "order": body.Order, "amount": body.Amount, "status": "succeeded"})
		s.charges[key] = ch
		s.amounts[id] = body.Amount
	}
	s.mu.Unlock()
	answer(w, http.StatusCreated, ch, seen)
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
		fail(w, http.StatusServiceUnavailable, "payments backend unavailable, try again")
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
		fail(w, http.StatusBadGateway, "upstream timed out")
		return
	}
	answer(w, http.StatusOK, json.RawMessage(`{"synced":true}`), false)
}

// count answers how many charges and refunds were made and how many
// requests the charge and refund endpoints served: a replay served from
// the ledger changes none of them.
func (s *Server) count(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	body, _ := json.Marshal(map[string]int{"charges": len(s.charges), "refunds": len(s.refunds), "requests": s.calls})
	s.mu.Unlock()
	answer(w, http.StatusOK, append(body, '\n'), false)
}

// idempotencyKey reads the request's Idempotency-Key, answering 400 when
// it has none.
func idempotencyKey(w http.ResponseWriter, r *http.Request) (string, bool) {
	key := r.Header.Get("Idempotency-Key")
	if key == "" {
		fail(w, http.StatusBadRequest, "Idempotency-Key required")
	}
	return key, key != ""
}

// answer writes a JSON answer; replayed marks one given again for a key
// already seen.
func answer(w http.ResponseWriter, status int, body []byte, replayed bool) {
	w.Header().Set("Content-Type", "application/json")
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// fail writes {"error": msg}.
func fail(w http.ResponseWriter, status int, msg string) {
	body, _ := json.Marshal(map[string]string{"error": msg})
	answer(w, status, body, false)
}
