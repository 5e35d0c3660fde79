package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/client"
)

// Over HTTP a request the server limited (429, with Retry-After) or timed
// out (408) is sent again under the same key, as one in flight is; a
// state conflict is not: it would answer the same.
func TestHTTPSendsAgainWhatMayPass(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	answers := map[string][]int{} // by path: the statuses to answer, in turn
	keys := map[string][]string{} // by path: the Idempotency-Key of each request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys[r.URL.Path] = append(keys[r.URL.Path], r.Header.Get("Idempotency-Key"))
		status := http.StatusOK
		if a := answers[r.URL.Path]; len(a) > 0 {
			status, answers[r.URL.Path] = a[0], a[1:]
		}
		mu.Unlock()
		switch status {
		case http.StatusOK, http.StatusAccepted:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = w.Write([]byte(`{"id": 7, "state": "queued", "result": null}`))
		case http.StatusConflict:
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(status)
			_, _ = w.Write([]byte(`{"code": "conflict", "detail": "task 7 is queued"}`))
		default:
			w.Header().Set("Retry-After", "0")
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(status)
			_, _ = w.Write([]byte(`{"code": "unavailable", "detail": "try again"}`))
		}
	}))
	defer srv.Close()
	c := client.HTTP(srv.URL, "tok", nil)
	ctx := context.Background()

	mu.Lock()
	answers["/v1/tasks/7/cancel"] = []int{http.StatusTooManyRequests, http.StatusRequestTimeout, http.StatusOK}
	answers["/v1/tasks/7/replay"] = []int{http.StatusConflict}
	mu.Unlock()
	if got, err := c.Cancel(ctx, 7); err != nil || got.ID != 7 {
		t.Fatalf("cancel answered 429, 408, then 200: %+v %v", got, err)
	}
	if _, err := c.Replay(ctx, 7); !errors.Is(err, agentledger.ErrConflict) {
		t.Errorf("replay answered 409: %v, want the conflict", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if k := keys["/v1/tasks/7/cancel"]; len(k) != 3 || k[0] == "" || k[1] != k[0] || k[2] != k[0] {
		t.Errorf("cancel's requests carried keys %q; want three under one key", k)
	}
	if k := keys["/v1/tasks/7/replay"]; len(k) != 1 {
		t.Errorf("replay was sent %d times for a state conflict; want once", len(k))
	}
}
