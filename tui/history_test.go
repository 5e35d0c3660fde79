package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest"

	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testenv"
	"github.com/agentledger/agentledger/notify"
	"github.com/agentledger/agentledger/notify/outbox"
)

// seedHistory gives task 1 of seedDB a history: it is replayed and runs
// again (attempt 1 of generation 1 again), then re-run as a new intent
// (attempt 1 of generation 2). Every notification event is delivered, to
// a sink whose refs are msg-1, msg-2, …: generation 1's message msg-… is
// recorded in generation 1's journal only.
func seedHistory(t *testing.T, s *seeded) {
	t.Helper()
	ctx := context.Background()
	sink := &refSink{}
	deliver := func() {
		t.Helper()
		d, err := outbox.NewDispatcher(s.Outbox, notify.NewDeliverer(s.Ledger, sink), outbox.Config{Owner: "test", Concurrency: 1})
		if err != nil {
			t.Fatal(err)
		}
		for {
			n, err := d.RunOnce(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				return
			}
		}
	}
	run := func(worker string) {
		t.Helper()
		got, err := s.Claims.Claim(ctx, claims.ClaimParams{Queue: "default", Worker: worker, Limit: 1, Lease: testenv.Lease})
		if err != nil || len(got) != 1 || got[0].ID != 1 {
			t.Fatalf("claim: %v, %d tasks", err, len(got))
		}
		if err := s.Claims.Succeed(ctx, claims.LeaseOf(got[0]), json.RawMessage(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	deliver()
	if _, err := s.Operator.Replay(ctx, "", 1); err != nil {
		t.Fatal(err)
	}
	run("worker-r")
	deliver()
	if _, err := s.Operator.Rerun(ctx, "", 1); err != nil {
		t.Fatal(err)
	}
	run("worker-s")
	deliver()
}

// refSink is a notify.Sink whose refs number its posts.
type refSink struct {
	mu    sync.Mutex
	posts int
}

func (s *refSink) Post(context.Context, string, notify.Message) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.posts++
	return fmt.Sprintf("msg-%d", s.posts), nil
}

func (s *refSink) Update(context.Context, string, notify.Message) error { return nil }

func (s *refSink) Find(context.Context, string, notify.Message, time.Time) (string, bool, error) {
	return "", false, nil
}

// openTask1 opens task 1, the oldest of seedDB, and goes to tab n.
func openTask1(t *testing.T, tm *teatest.TestModel, tabs int) {
	t.Helper()
	waitFor(t, tm, "page 1 · 4 tasks", noLiveWorkers)
	press(tm, "down", "down", "down", "enter")
	waitFor(t, tm, "[Overview]", "Task 1  succeeded")
	for range tabs {
		press(tm, "tab")
	}
}

// The attempts tab has agentctl show's columns and the generation, a
// legend, and ENDED as a time: a replay's attempt reads 1 again, in the
// same generation, with the next fencing token.
func TestConsoleAttemptsTab(t *testing.T) {
	s := seedDB(t)
	seedHistory(t, s)
	tm := startConsole(t, s)
	openTask1(t, tm, 1)
	waitFor(t, tm, "[Attempts (3)]", "GEN ATTEMPT WORKER")
	golden.RequireEqual(t, []byte(finish(t, tm)))
}

// The notifications tab shows each event's generation and the ref of its
// message, found in its own generation's journal.
func TestConsoleNotificationsTab(t *testing.T) {
	s := seedDB(t)
	seedHistory(t, s)
	tm := startConsole(t, s)
	openTask1(t, tm, 3)
	waitFor(t, tm, "[Notifications (3)]", "ID GEN EVENT")
	golden.RequireEqual(t, []byte(finish(t, tm)))
}
