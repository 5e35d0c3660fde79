package worker_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/worker"
)

// lossObserver drops the pool's tool the moment a claim returns, before
// the claimed task runs: an MCP server that disconnects in between.
type lossObserver struct {
	worker.Observer
	gone *atomic.Bool
}

func (o lossObserver) Claimed(string, int)                                   { o.gone.Store(true) }
func (o lossObserver) LeaseLost()                                            {}
func (o lossObserver) Finished(string, agentledger.TaskState, time.Duration) {}

// A pool that claimed a task and lost what it needs before running it
// hands it back without counting an attempt, and no longer claims it; a
// pool that has it runs it. A pool without the capability never claims it.
func TestAPoolHandsBackWhatItCanNoLongerRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	s := claims.New(db)
	r, err := s.Enqueue(ctx, claims.EnqueueParams{Kind: "steps", MaxAttempts: 1, Needs: []string{"mcp:shop"}})
	if err != nil {
		t.Fatal(err)
	}
	var ranBy atomic.Value
	handler := func(name string) worker.Handler {
		return worker.HandlerFunc(func(context.Context, *agentledger.Task) (json.RawMessage, error) {
			ranBy.Store(name)
			return json.RawMessage(`{}`), nil
		})
	}
	// Without the server: never claims it.
	stopPlain := runPool(t, db, worker.Config{ID: "plain", Handlers: map[string]worker.Handler{"steps": handler("plain")},
		PollInterval: 10 * time.Millisecond, Caps: func() []string { return []string{"tool:http_request"} }})
	// With the server until its claim returns.
	gone := &atomic.Bool{}
	stopLosing := runPool(t, db, worker.Config{ID: "losing", Handlers: map[string]worker.Handler{"steps": handler("losing")},
		PollInterval: 10 * time.Millisecond, Observer: lossObserver{gone: gone},
		Caps: func() []string {
			if gone.Load() {
				return []string{}
			}
			return []string{"mcp:shop"}
		}})
	for !gone.Load() || waitingOf(t, s, r.Task.ID) == "" {
		time.Sleep(10 * time.Millisecond) // polling a condition, not ordering events
	}
	stopPlain()
	stopLosing()
	runPool(t, db, worker.Config{ID: "shop", Handlers: map[string]worker.Handler{"steps": handler("shop")},
		PollInterval: 10 * time.Millisecond, Caps: func() []string { return []string{"mcp:shop", "tool:http_request"} }})
	task := waitState(t, s, r.Task.ID, agentledger.StateSucceeded, agentledger.StateDead)
	if task.State != agentledger.StateSucceeded || task.Attempt != 1 || ranBy.Load() != "shop" {
		t.Fatalf("task %s at attempt %d run by %v, want succeeded at attempt 1 by shop", task.State, task.Attempt, ranBy.Load())
	}
	atts, err := s.Attempts(ctx, task.ID)
	if err != nil || len(atts) != 2 || atts[0].Worker != "losing" || atts[0].Outcome != agentledger.OutcomeDeferred ||
		!strings.Contains(atts[0].Error, "handed back by worker losing, which no longer has MCP server shop") {
		t.Fatalf("attempt records %+v %v", atts, err)
	}
}

// waitingOf is task id's wait reason.
func waitingOf(t *testing.T, s *claims.Store, id int64) string {
	t.Helper()
	task, err := s.Get(context.Background(), "", id)
	if err != nil {
		t.Fatal(err)
	}
	return task.WaitReason
}
