package demo

import (
	"fmt"
	"net/http"
)

// ship refuses every shipment with 422: the demo's courier serves no
// address. http_request takes a 4xx answer as a permanent failure, so the
// task that asked ends dead at once, and a saga undoes its completed steps.
func (s *Server) ship(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Order int `json:"order"`
	}
	_ = decodeOptional(w, r, &body) // refused whatever it says
	fail(w, http.StatusUnprocessableEntity, fmt.Sprintf("no courier delivers order %d: its address is outside every route", body.Order))
}
