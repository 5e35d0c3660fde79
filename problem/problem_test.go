package problem_test

import (
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/problem"
)

func TestOf(t *testing.T) {
	t.Parallel()
	if p := problem.Of(errors.New("secret internals")); p.Status != 500 || p.Code != "internal" || strings.Contains(p.Detail, "secret") {
		t.Errorf("an unknown error: %+v", p)
	}
	p := problem.Of(fmt.Errorf("submit: %w", agentledger.Invalid("payload.steps", "must not be empty")))
	if p.Status != 422 || p.Code != "invalid_request" || p.Field != "payload.steps" || p.Type != problem.TypePrefix+"invalid_request" ||
		p.Detail != "submit: payload.steps: must not be empty" {
		t.Errorf("an invalid input: %+v", p)
	}
	p = problem.Of(agentledger.Errorf(agentledger.CodeNotFound, "task %d does not exist", 9))
	if p.Status != 404 || p.Detail != "task 9 does not exist" || p.Title != "Not found" {
		t.Errorf("not found: %+v", p)
	}
	// A 5xx written for the client keeps its message; others do not.
	if p := problem.Of(agentledger.Errorf(agentledger.CodeUnavailable, "not stored; retry")); p.Status != 503 || p.Detail != "not stored; retry" {
		t.Errorf("unavailable: %+v", p)
	}
}

func TestWrite(t *testing.T) {
	t.Parallel()
	w := httptest.NewRecorder()
	problem.Write(w, agentledger.RetryAfter(agentledger.Errorf(agentledger.CodeIdempotencyKeyInFlight, "in flight"), 1500*time.Millisecond))
	if w.Code != 409 || w.Header().Get("Content-Type") != "application/problem+json" || w.Header().Get("Retry-After") != "2" ||
		!strings.Contains(w.Body.String(), `"code":"idempotency_key_in_flight"`) {
		t.Errorf("%d %v %s", w.Code, w.Header(), w.Body)
	}
}
