package demo

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// reserve holds stock for an order, once per Idempotency-Key.
func (s *Server) reserve(w http.ResponseWriter, r *http.Request) {
	key, ok := idempotencyKey(w, r)
	if !ok {
		return
	}
	var body struct {
		Order int    `json:"order"`
		SKU   string `json:"sku"`
		Qty   int    `json:"qty"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&body); err != nil || body.SKU == "" || body.Qty < 1 {
		fail(w, http.StatusBadRequest, `body must be {"order", "sku", "qty"} with a sku and a qty of at least 1`)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stockCalls++
	rs, seen := s.reservations[key]
	if !seen {
		id := fmt.Sprintf("rs_%d", len(s.reservations)+1)
		rs, _ = json.Marshal(map[string]any{"id": id, "order": body.Order, "sku": body.SKU, "qty": body.Qty, "status": "held"})
		s.reservations[key], s.held[id] = rs, true
	}
	answer(w, http.StatusCreated, rs, seen)
}

// release gives reservation {id}'s stock back, once per Idempotency-Key;
// a reservation released already under another key is refused (409).
func (s *Server) release(w http.ResponseWriter, r *http.Request) {
	key, ok := idempotencyKey(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stockCalls++
	if rl, seen := s.releases[key]; seen {
		answer(w, http.StatusOK, rl, true)
		return
	}
	held, found := s.held[id]
	switch {
	case !found:
		fail(w, http.StatusNotFound, fmt.Sprintf("no reservation %s", id))
		return
	case !held:
		fail(w, http.StatusConflict, fmt.Sprintf("reservation %s is already released", id))
		return
	}
	rl, _ := json.Marshal(map[string]any{"id": id, "status": "released"})
	s.releases[key], s.held[id] = rl, false
	answer(w, http.StatusOK, rl, false)
}

// countReservations answers how many reservations and releases were made
// and how many requests their endpoints served.
func (s *Server) countReservations(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	body, _ := json.Marshal(map[string]int{"reservations": len(s.reservations), "releases": len(s.releases),
		"requests": s.stockCalls})
	s.mu.Unlock()
	answer(w, http.StatusOK, append(body, '\n'), false)
}
