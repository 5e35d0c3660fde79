package worker_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/worker"
)

// startedPool runs a pool built from cfg and returns it, once its claim
// loop is idle (a slot can be reserved), with the function that stops it.
// The pool only polls, once an hour: a LISTEN session's first wake-up
// would end the idle spell of its first claim at a moment no test knows,
// and nothing else wakes it but the Queued of an enqueue through it.
func startedPool(t *testing.T, cfg worker.Config) (*worker.Pool, *claims.Store, func()) {
	t.Helper()
	db := testdb.New(t)
	cfg.PollOnly, cfg.PollInterval = true, time.Hour
	p, stop := startPool(t, db, cfg)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if s, ok := p.Reserve("default", "hold", nil); ok {
			s.Release()
			return p, claims.New(db), stop
		}
		if time.Now().After(deadline) {
			t.Fatal("the pool's claim loop was not idle after 20s")
		}
		time.Sleep(5 * time.Millisecond) // polling a condition, not ordering events
	}
}

// An idle pool takes a task enqueued through it at once: the enqueue
// returns it running, leased to the pool, and the pool runs it without a
// claim. With every slot taken the next task is queued and claimed when
// a slot frees.
func TestAnIdlePoolStartsATaskAtItsEnqueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	started := make(chan int64, 4)
	release := make(chan struct{})
	claimed := &claimCount{}
	hold := worker.HandlerFunc(func(ctx context.Context, task *agentledger.Task) (json.RawMessage, error) {
		started <- task.ID
		<-release
		return json.RawMessage(`{}`), nil
	})
	p, s, _ := startedPool(t, worker.Config{ID: "w1", Concurrency: 1, Observer: claimed,
		Handlers: map[string]worker.Handler{"hold": hold}})

	first, err := s.EnqueueStart(ctx, claims.EnqueueParams{Kind: "hold"}, p)
	if err != nil {
		t.Fatal(err)
	}
	if first.Task.State != agentledger.StateRunning || first.Task.LeaseOwner != "w1" {
		t.Fatalf("enqueued to an idle pool: %s, leased to %q; want running, leased to w1", first.Task.State, first.Task.LeaseOwner)
	}
	if id := recv(t, started, "the started task"); id != first.Task.ID {
		t.Fatalf("ran task %d, want %d", id, first.Task.ID)
	}

	// The one slot is taken: the next is queued, and claimed once the
	// first ends (Queued woke the loop, which waits for a slot).
	second, err := s.EnqueueStart(ctx, claims.EnqueueParams{Kind: "hold"}, p)
	if err != nil {
		t.Fatal(err)
	}
	if second.Task.State != agentledger.StateQueued {
		t.Fatalf("enqueued to a full pool: %s, want queued", second.Task.State)
	}
	release <- struct{}{}
	if id := recv(t, started, "the queued task"); id != second.Task.ID {
		t.Fatalf("ran task %d, want %d", id, second.Task.ID)
	}
	release <- struct{}{}
	waitState(t, s, first.Task.ID, agentledger.StateSucceeded)
	waitState(t, s, second.Task.ID, agentledger.StateSucceeded)
	if n, started := claimed.n.Load(), claimed.started.Load(); n != 2 || started != 1 {
		t.Fatalf("Observer.Claimed counted %d tasks, StartedAtEnqueue %d; want 2 (one started, one claimed) and 1", n, started)
	}
}

// A pool reserves no slot for a task it would not claim — another queue,
// a kind it does not serve, a need it lacks — nor once it has stopped.
func TestReserveRefusesWhatThePoolWouldNotClaim(t *testing.T) {
	t.Parallel()
	noop := worker.HandlerFunc(func(context.Context, *agentledger.Task) (json.RawMessage, error) { return nil, nil })
	p, _, stop := startedPool(t, worker.Config{Caps: func() []string { return []string{"tool:a"} },
		Handlers: map[string]worker.Handler{"hold": noop}})
	for _, c := range []struct {
		what, queue, kind string
		needs             []string
	}{
		{"another queue", "other", "hold", nil},
		{"a kind it does not serve", "default", "nope", nil},
		{"a need it lacks", "default", "hold", []string{"tool:b"}},
	} {
		if s, ok := p.Reserve(c.queue, c.kind, c.needs); ok {
			s.Release()
			t.Errorf("%s: a slot was reserved", c.what)
		}
	}
	if s, ok := p.Reserve("default", "hold", []string{"tool:a"}); !ok {
		t.Error("a need it has: no slot")
	} else {
		s.Release()
	}
	stop()
	if _, ok := p.Reserve("default", "hold", nil); ok {
		t.Error("a stopped pool reserved a slot")
	}
}

// claimCount counts the tasks Observer.Claimed is told of, and those
// StartObserver is.
type claimCount struct {
	worker.Observer
	n, started atomic.Int64
}

func (c *claimCount) Claimed(_ string, n int)                               { c.n.Add(int64(n)) }
func (c *claimCount) StartedAtEnqueue(string)                               { c.started.Add(1) }
func (c *claimCount) LeaseLost()                                            {}
func (c *claimCount) Finished(string, agentledger.TaskState, time.Duration) {}

// heldStarter hands out one slot reserved beforehand.
type heldStarter struct{ slot claims.Slot }

func (h heldStarter) Reserve(string, string, []string) (claims.Slot, bool) { return h.slot, true }
func (heldStarter) Queued(string)                                          {}

// A slot reserved before the pool began to stop, whose task is inserted
// after, gives the task's lease back instead of running it: shutdown has
// released what it held by then. The task is queued again, its attempt not
// counted, and the pool stops without waiting for it.
func TestASlotReservedAsThePoolStopsReleasesItsTask(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ran := make(chan int64, 1)
	hold := worker.HandlerFunc(func(_ context.Context, task *agentledger.Task) (json.RawMessage, error) {
		ran <- task.ID
		return nil, nil
	})
	p, s, stop := startedPool(t, worker.Config{Grace: time.Hour, Handlers: map[string]worker.Handler{"hold": hold}})
	slot, ok := p.Reserve("default", "hold", nil)
	if !ok {
		t.Fatal("no slot in an idle pool")
	}
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	deadline := time.Now().Add(20 * time.Second)
	for { // stopping: no slot is reserved any more
		if sl, ok := p.Reserve("default", "hold", nil); !ok {
			break
		} else {
			sl.Release()
		}
		if time.Now().After(deadline) {
			t.Fatal("the pool still reserved slots 20s after its stop")
		}
		time.Sleep(5 * time.Millisecond) // polling a condition, not ordering events
	}
	res, err := s.EnqueueStart(ctx, claims.EnqueueParams{Kind: "hold"}, heldStarter{slot})
	if err != nil || res.Task.State != agentledger.StateRunning {
		t.Fatalf("inserted with the held slot: %v %+v", err, res.Task)
	}
	recv(t, stopped, "the pool's stop (a grace of an hour: only the released slot lets it end)")
	got := waitState(t, s, res.Task.ID, agentledger.StateQueued)
	if got.Attempt != 0 || got.LeaseOwner != "" {
		t.Errorf("released task: attempt %d owner %q, want 0 and none", got.Attempt, got.LeaseOwner)
	}
	select {
	case id := <-ran:
		t.Fatalf("task %d ran on a stopping pool", id)
	default:
	}
}
