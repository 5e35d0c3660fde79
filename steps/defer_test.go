package steps_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/flow"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/operator"
	"github.com/agentledger/agentledger/steps"
	"github.com/agentledger/agentledger/tools"
	"github.com/agentledger/agentledger/worker"
)

// takes counts the bookings the HTTP tool makes.
type takes struct {
	*flow.Limiter
	n atomic.Int64
}

func (t *takes) Take(ctx context.Context, target string) (time.Duration, error) {
	t.n.Add(1)
	return t.Limiter.Take(ctx, target)
}

// Waiting is not failing: three POSTs to an origin limited to one call
// every 2 s all happen, spaced by the limit, in a task allowed one attempt:
// the waits defer the task (attempt records "deferred") without using it.
// A replay serves every call from the ledger and books nothing.
func TestRateLimitedCallsDeferWithoutUsingAttempts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	var mu sync.Mutex
	var arrivals []time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		arrivals = append(arrivals, time.Now())
		n := len(arrivals)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]int{"n": n})
	}))
	t.Cleanup(srv.Close)

	const emission = 2 * time.Second // 30 a minute: one call every 2 s, no burst
	if _, err := flow.NewStore(db).Put(ctx, flow.Limit{Target: "http:" + srv.URL,
		Rate: flow.Rate{N: 30, Per: time.Minute}, Burst: 1, Source: flow.SourceOperator}); err != nil {
		t.Fatal(err)
	}
	lim := &takes{Limiter: flow.NewLimiter(db, slog.New(slog.NewTextHandler(io.Discard, nil)))}
	tool, err := tools.NewHTTPRequest(tools.HTTPConfig{AllowedHosts: []string{srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	reg := tools.NewRegistry(tool)
	runner := steps.New(ledger.New(db), reg)
	runner.Path = &tools.Path{Ledger: ledger.New(db), Tools: reg, Gate: lim}
	pool, err := worker.New(db, worker.Config{Handlers: map[string]worker.Handler{"steps": runner},
		PollInterval: 50 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	pctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- pool.Run(pctx) }()
	t.Cleanup(func() { stop(); <-done })

	s := claims.New(db)
	step := `{"tool":"http_request","args":{"method":"POST","url":"` + srv.URL + `/charge","body":{"i":%d}}}`
	payload := `{"steps":[` + fmt.Sprintf(step, 1) + `,` + fmt.Sprintf(step, 2) + `,` + fmt.Sprintf(step, 3) + `]}`
	r, err := s.Enqueue(ctx, claims.EnqueueParams{Kind: "steps", MaxAttempts: 1, Payload: json.RawMessage(payload)})
	if err != nil {
		t.Fatal(err)
	}
	task := waitFinished(t, s, r.Task.ID)
	if task.State != agentledger.StateSucceeded || task.Attempt != 1 || task.WaitReason != "" {
		t.Fatalf("task %s after %d attempts (wait %q): %s", task.State, task.Attempt, task.WaitReason, task.LastError)
	}
	mu.Lock()
	got := append([]time.Time(nil), arrivals...)
	mu.Unlock()
	if len(got) != 3 {
		t.Fatalf("the server saw %d calls, want 3", len(got))
	}
	// Bookings are one emission apart on the database's clock; a call
	// arrives a few milliseconds after its booking, so arrivals may come
	// that much closer.
	for i := 1; i < len(got); i++ {
		if gap := got[i].Sub(got[i-1]); gap < emission-100*time.Millisecond {
			t.Errorf("calls %d and %d arrived %s apart, want about %s", i, i+1, gap, emission)
		}
	}
	atts, err := s.Attempts(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	deferred := 0
	for _, a := range atts {
		switch {
		case a.Outcome == agentledger.OutcomeDeferred && a.Attempt == 1:
			deferred++
		case a.Outcome == agentledger.OutcomeSucceeded && a.Attempt == 1:
		default:
			t.Errorf("attempt record %+v", a)
		}
	}
	// Each later call waited, the task deferred each time. A deferral
	// that performed nothing adds no record after one, however many it
	// took; but the claims that performed calls 1 and 2 before their
	// deferral are each recorded, as the journal names their tokens.
	if deferred != 2 {
		t.Errorf("%d deferred attempt records, want 2 (the claims that performed calls 1 and 2, then waited %s)", deferred, emission)
	}

	booked := lim.n.Load()
	if _, err := operator.New(db).Replay(ctx, "", task.ID); err != nil {
		t.Fatal(err)
	}
	replayed := waitFinished(t, s, task.ID)
	if replayed.State != agentledger.StateSucceeded || lim.n.Load() != booked {
		t.Fatalf("replay: %s, %d bookings (want none)", replayed.State, lim.n.Load()-booked)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(arrivals) != 3 {
		t.Fatalf("the replay reached the server: %d calls", len(arrivals))
	}
}

// waitFinished waits for task id to succeed or die (the database is the
// only signal of a written outcome), failing after 60 s.
func waitFinished(t *testing.T, s *claims.Store, id int64) *agentledger.Task {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		task, err := s.Get(context.Background(), "", id)
		if err != nil {
			t.Fatal(err)
		}
		if task.State == agentledger.StateSucceeded || task.State == agentledger.StateDead {
			return task
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %d is %s after 60s", id, task.State)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition, not ordering events
	}
}
