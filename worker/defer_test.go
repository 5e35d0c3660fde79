package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/worker"
)

type deferCount struct {
	worker.Observer
	n atomic.Int64
}

func (d *deferCount) Claimed(string, int)                                   {}
func (d *deferCount) LeaseLost()                                            {}
func (d *deferCount) Finished(string, agentledger.TaskState, time.Duration) {}
func (d *deferCount) Deferred(kind, targetKind string) {
	if kind == "waits" && targetKind == "http" {
		d.n.Add(1)
	}
}

// A handler that waits for a limit (a wrapped DeferredError) defers its
// task without using an attempt: with max_attempts 1 it waits twice and
// still succeeds; the wait is recorded as one deferred attempt, however
// many deferrals it took.
func TestDeferredAttemptsAreNotCounted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	s := claims.New(db)
	r, err := s.Enqueue(ctx, claims.EnqueueParams{Kind: "waits", MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int64
	h := worker.HandlerFunc(func(context.Context, *agentledger.Task) (json.RawMessage, error) {
		if runs.Add(1) <= 2 {
			d := agentledger.Deferred(time.Now().Add(50*time.Millisecond), "http:https://slow.example:443", "rate limit 1/s")
			return nil, fmt.Errorf("step 1: %w", d)
		}
		return json.RawMessage(`{"ok":true}`), nil
	})
	obs := &deferCount{}
	runPool(t, db, worker.Config{Handlers: map[string]worker.Handler{"waits": h}, Observer: obs,
		PollInterval: 20 * time.Millisecond})
	task := waitState(t, s, r.Task.ID, agentledger.StateSucceeded, agentledger.StateDead)
	if task.State != agentledger.StateSucceeded || task.Attempt != 1 || task.WaitReason != "" {
		t.Fatalf("task %s attempt %d wait %q, want succeeded after 1 attempt", task.State, task.Attempt, task.WaitReason)
	}
	atts, err := s.Attempts(ctx, task.ID)
	if err != nil || len(atts) != 2 {
		t.Fatalf("attempts %+v %v", atts, err)
	}
	if a := atts[0]; a.Outcome != agentledger.OutcomeDeferred || a.Attempt != 1 || a.Error != "rate limit 1/s" {
		t.Fatalf("attempt record 0: %+v", a)
	}
	if obs.n.Load() != 2 {
		t.Fatalf("observer saw %d deferrals, want 2", obs.n.Load())
	}
}

// A task deferred for a limit's next slot is claimed again when that slot
// comes, not at the next poll: with polls an hour apart, a deferral of
// 100 ms still ends in the task's success.
func TestDeferredTaskComesBackOnTime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	s := claims.New(db)
	r, err := s.Enqueue(ctx, claims.EnqueueParams{Kind: "paced"})
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int64
	h := worker.HandlerFunc(func(context.Context, *agentledger.Task) (json.RawMessage, error) {
		if runs.Add(1) == 1 {
			return nil, agentledger.Deferred(time.Now().Add(100*time.Millisecond), "http:https://slow.example:443",
				"http:https://slow.example:443: rate limit, next slot in 100ms")
		}
		return json.RawMessage(`{"ok":true}`), nil
	})
	runPool(t, db, worker.Config{Handlers: map[string]worker.Handler{"paced": h}, PollInterval: time.Hour})
	if task := waitState(t, s, r.Task.ID, agentledger.StateSucceeded, agentledger.StateDead); task.State != agentledger.StateSucceeded || runs.Load() != 2 {
		t.Fatalf("task %s after %d runs, want succeeded after 2", task.State, runs.Load())
	}
}
