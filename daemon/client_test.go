package daemon_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/client"
	"github.com/agentledger/agentledger/daemon"
	"github.com/agentledger/agentledger/internal/test/testdaemon"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/tools"
	"github.com/agentledger/agentledger/worker"
)

// A daemon's Client submits through its door, and the daemon's idle
// workers take what it submits at the enqueue: the task comes back
// running, leased to the daemon's pool, and runs once. Outside Run it
// refuses with ErrNotRunning.
func TestClientSubmitsThroughTheDaemon(t *testing.T) {
	t.Parallel()
	url := testdb.URL(t)
	d := daemon.New(daemon.Config{
		Database:    daemon.Database{URL: url},
		Worker:      daemon.Worker{ID: "embedded"},
		Maintenance: daemon.Maintenance{NoCron: true, NoJanitor: true},
		Logger:      quiet(),
		Stdout:      io.Discard,
	})
	var runs atomic.Int64
	if err := d.RegisterKind("greet", worker.HandlerFunc(func(context.Context, *agentledger.Task) (json.RawMessage, error) {
		runs.Add(1)
		return json.RawMessage(`{"ok":true}`), nil
	})); err != nil {
		t.Fatal(err)
	}
	if err := d.RegisterKind("refund", daemon.Kind(func(context.Context, *agentledger.Task, Refund) (map[string]any, error) {
		return nil, nil
	})); err != nil {
		t.Fatal(err)
	}
	lookup, err := tools.Define(tools.Spec[struct{}]{Name: "lookup_order", Class: ledger.Pure,
		Perform: func(context.Context, ledger.Call, struct{}) (ledger.Result, error) { return ledger.Result{}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.RegisterTool(lookup); err != nil {
		t.Fatal(err)
	}
	c := d.Client("acme")
	ctx := context.Background()
	greet := client.Request{Kind: "greet", Payload: json.RawMessage(`{}`)}
	if _, err := c.Submit(ctx, greet); !errors.Is(err, daemon.ErrNotRunning) {
		t.Fatalf("Submit before Run: %v, want ErrNotRunning", err)
	}

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	stopped := make(chan error, 1)
	go func() { stopped <- d.Run(runCtx) }()
	select {
	case <-d.Ready():
	case err := <-stopped:
		t.Fatalf("Run: %v", err)
	}
	s := claims.New(testdb.Open(t, url))
	// The pool is idle once its first claims found nothing; until then a
	// submission may be queued and claimed. Each is run once either way.
	started := false
	var last int64
	for i := 0; i < 100 && !started; i++ {
		task, err := c.Submit(ctx, greet)
		if err != nil {
			t.Fatal(err)
		}
		last = task.ID
		if task.Tenant != "acme" {
			t.Fatalf("submitted for tenant %q, want acme", task.Tenant)
		}
		started = task.State == agentledger.StateRunning && task.LeaseOwner == "embedded"
		if got := testdaemon.WaitFinished(t, s, task.ID); got.State != agentledger.StateSucceeded {
			t.Fatalf("task %d: %s %s", task.ID, got.State, got.LastError)
		}
		if n := runs.Load(); n != int64(i+1) {
			t.Fatalf("%d runs for %d tasks", n, i+1)
		}
	}
	if !started {
		t.Fatal("none of 100 submissions to an idle daemon started at its enqueue")
	}
	if _, err := c.Submit(ctx, client.Request{Kind: "greet", Payload: json.RawMessage(`[1]`), Options: client.Options{Priority: 101}}); err == nil {
		t.Error("a priority of 101 passed the daemon's door")
	}
	// The door checks a typed kind in process: its Validate too, which
	// the schema a daemon publishes cannot carry.
	if _, err := client.Submit(ctx, c, "refund", Refund{Order: 7, Amount: -1}, client.Options{}); err == nil ||
		!strings.Contains(err.Error(), "amount: must be positive") {
		t.Errorf("a refund of -1 through the daemon's Client: %v, want its Validate's refusal", err)
	}
	// And the classes of its own tools: a pure call changes nothing to undo.
	undoLookup := client.Request{Kind: "steps", Payload: json.RawMessage(`{"steps":[{"tool":"lookup_order","compensate":{"tool":"lookup_order"}}]}`)}
	if _, err := c.Submit(ctx, undoLookup); err == nil || !strings.Contains(err.Error(), "lookup_order is a pure tool") {
		t.Errorf("a compensation of a pure call through the daemon's Client: %v, want it refused", err)
	}

	// It replays its tenant's tasks, and cancels those not finished.
	if _, err := c.Replay(ctx, last); err != nil {
		t.Fatalf("Replay of task %d: %v", last, err)
	}
	if got := testdaemon.WaitFinished(t, s, last); got.State != agentledger.StateSucceeded {
		t.Fatalf("replayed task %d: %s %s", last, got.State, got.LastError)
	}
	if _, err := c.Cancel(ctx, last); !errors.Is(err, agentledger.ErrConflict) {
		t.Errorf("Cancel of succeeded task %d: %v, want a conflict", last, err)
	}

	stop()
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the daemon did not stop within a minute")
	}
	if _, err := c.Submit(ctx, greet); !errors.Is(err, daemon.ErrNotRunning) {
		t.Fatalf("Submit after Run: %v, want ErrNotRunning", err)
	}
	if _, err := c.Cancel(ctx, last); !errors.Is(err, daemon.ErrNotRunning) {
		t.Errorf("Cancel after Run: %v, want ErrNotRunning", err)
	}
}
