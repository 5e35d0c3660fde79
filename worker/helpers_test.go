package worker_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/worker"
)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// runPool starts a pool and returns a function that stops it and waits.
func runPool(t *testing.T, db *pgxpool.Pool, cfg worker.Config) (stop func()) {
	t.Helper()
	_, stop = startPool(t, db, cfg)
	return stop
}

// startPool is runPool, and returns the pool too.
func startPool(t *testing.T, db *pgxpool.Pool, cfg worker.Config) (*worker.Pool, func()) {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quietLogger()
	}
	p, err := worker.New(db, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("pool did not stop within 30s")
		}
	}
	t.Cleanup(stop)
	return p, stop
}

// waitState waits until task id reaches one of the states (the database is
// the only signal of a written outcome), failing after 20s.
func waitState(t *testing.T, s *claims.Store, id int64, states ...agentledger.TaskState) *agentledger.Task {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		task, err := s.Get(context.Background(), "", id)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range states {
			if task.State == st {
				return task
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %d is %s after 20s, want %v", id, task.State, states)
		}
		time.Sleep(10 * time.Millisecond) // polling a condition, not ordering events
	}
}

func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(20 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

func enqueue(t *testing.T, s *claims.Store, kind string, payload string) *agentledger.Task {
	t.Helper()
	r, err := s.Enqueue(context.Background(), claims.EnqueueParams{Kind: kind, Payload: json.RawMessage(payload)})
	if err != nil {
		t.Fatal(err)
	}
	return r.Task
}
