package demo

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// refund refunds charge {id} in full, once per Idempotency-Key: a retry
// with the key gets the same refund. A charge is refunded once; a refund
// under another key is refused (409), as a payments API refuses to refund
// more than was charged.
func (s *Server) refund(w http.ResponseWriter, r *http.Request) {
	key, ok := idempotencyKey(w, r)
	if !ok {
		return
	}
	var body struct {
		Reason string `json:"reason"`
	}
	if err := decodeOptional(w, r, &body); err != nil {
		fail(w, http.StatusBadRequest, `body must be empty or {"reason"}`)
		return
	}
	charge := r.PathValue("id")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if rf, seen := s.refunds[key]; seen {
		answer(w, http.StatusCreated, rf, true)
		return
	}
	amount, found := s.amounts[charge]
	switch {
	case !found:
		fail(w, http.StatusNotFound, fmt.Sprintf("no charge %s", charge))
		return
	case s.refunded[charge] != "":
		fail(w, http.StatusConflict, fmt.Sprintf("charge %s is already refunded (%s)", charge, s.refunded[charge]))
		return
	}
	id := fmt.Sprintf("re_%d", len(s.refunds)+1)
	rf, _ := json.Marshal(map[string]any{"id": id, "charge": charge, "amount": amount, "reason": body.Reason,
		"status": "succeeded"})
	s.refunds[key], s.refunded[charge] = rf, id
	answer(w, http.StatusCreated, rf, false)
}

// decodeOptional decodes a JSON body into v; an empty body leaves v as
// it is.
func decodeOptional(w http.ResponseWriter, r *http.Request, v any) error {
	err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(v)
	if err == io.EOF {
		return nil
	}
	return err
}
