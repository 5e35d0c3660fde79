package slack

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// expired is a context whose deadline has passed but whose timer has not
// fired yet: Done is still open, as in a process just resumed.
type expired struct{ context.Context }

func (expired) Deadline() (time.Time, bool) { return time.Now().Add(-time.Second), true }
func (expired) Done() <-chan struct{}       { return nil }
func (expired) Err() error                  { return nil }

// A request past its deadline is not sent, even while its context is not
// yet cancelled; one within it is.
func TestARequestPastItsDeadlineIsNotSent(t *testing.T) {
	var got atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { got.Add(1) }))
	defer srv.Close()
	hc := withDeadline(srv.Client())

	req, err := http.NewRequestWithContext(expired{context.Background()}, http.MethodPost, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hc.Do(req); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("past its deadline: %v, want context.DeadlineExceeded", err)
	}
	if n := got.Load(); n != 0 {
		t.Fatalf("the server got %d requests past their deadline", n)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, _ = http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, nil)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if n := got.Load(); n != 1 {
		t.Fatalf("the server got %d requests within their deadline, want 1", n)
	}
}
