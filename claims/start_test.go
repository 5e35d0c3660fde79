package claims_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

// fakeStarter is a pool that always has a slot (unless full) and records
// what became of each.
type fakeStarter struct {
	mu       sync.Mutex
	full     bool
	asked    int
	started  []*agentledger.Task
	released int
	queued   int // tasks due now queued instead
}

func (f *fakeStarter) Reserve(queue, kind string, needs []string) (claims.Slot, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked++
	if f.full {
		return nil, false
	}
	return fakeSlot{f}, true
}

type fakeSlot struct{ f *fakeStarter }

func (f *fakeStarter) Queued(string) { f.mu.Lock(); f.queued++; f.mu.Unlock() }

func (s fakeSlot) Lease() (string, time.Duration) { return "eager", time.Minute }
func (s fakeSlot) Takes() (kinds, caps []string)  { return []string{"noop"}, []string{} }
func (s fakeSlot) Start(t *agentledger.Task, _ time.Time) {
	s.f.mu.Lock()
	s.f.started = append(s.f.started, t)
	s.f.mu.Unlock()
}
func (s fakeSlot) Release() { s.f.mu.Lock(); s.f.released++; s.f.mu.Unlock() }

func (f *fakeStarter) counts() (asked, started, released int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.asked, len(f.started), f.released
}

// A task enqueued with a free slot is inserted running, leased as a claim
// leases (attempt 1, a token at least the clock in µs, until now + the
// lease), wakes no worker, and finishes under its lease like a claimed
// one.
func TestEnqueueStartLeasesTheTask(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.URL(t)
	c := newClock()
	s := claims.New(testdb.Open(t, url))
	s.Now = c.Now
	l := listen(t, url)
	st := &fakeStarter{}

	res, err := s.EnqueueStart(ctx, claims.EnqueueParams{Kind: "noop", Queue: "q1"}, st)
	if err != nil {
		t.Fatal(err)
	}
	task := res.Task
	if _, started, released := st.counts(); started != 1 || released != 0 || st.started[0].ID != task.ID {
		t.Fatalf("started %d, released %d; want the task started", started, released)
	}
	floor := c.Now().UnixMicro()
	if task.State != agentledger.StateRunning || task.Attempt != 1 || task.LeaseOwner != "eager" ||
		task.LeaseToken < floor || task.LeaseExpiresAt == nil || !task.LeaseExpiresAt.Equal(c.Now().Add(time.Minute)) {
		t.Fatalf("started task: state %s attempt %d owner %q token %d (floor %d) expires %v",
			task.State, task.Attempt, task.LeaseOwner, task.LeaseToken, floor, task.LeaseExpiresAt)
	}
	// No wake-up: the next one heard is the queued task's of q2.
	if _, err := s.Enqueue(ctx, claims.EnqueueParams{Kind: "noop", Queue: "q2"}); err != nil {
		t.Fatal(err)
	}
	if q := wakeUp(t, l, "enqueue"); q != "q2" {
		t.Fatalf("woke queue %q first; a started task wakes nobody", q)
	}
	// No claim finds it; its lease finishes it.
	if got, err := s.Claim(ctx, claims.ClaimParams{Queue: "q1", Worker: "w", Limit: 5, Lease: time.Minute}); err != nil || len(got) != 0 {
		t.Fatalf("claim of q1: %v, %d tasks; the started task is leased", err, len(got))
	}
	if err := s.Succeed(ctx, claims.LeaseOf(task), raw(`{"ok":true}`)); err != nil {
		t.Fatalf("succeed under the started lease: %v", err)
	}
	if got := get(t, s, task.ID); got.State != agentledger.StateSucceeded {
		t.Fatalf("state %s, want succeeded", got.State)
	}
}

// A started task whose pool dies before it runs is the lost claim's case:
// its lease expires and a claim takes it with a later token, fencing off
// the first.
func TestAStartedTaskLostIsClaimedAfterItsLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClock()
	s := pinnedStore(t, c)
	st := &fakeStarter{}
	res, err := s.EnqueueStart(ctx, claims.EnqueueParams{Kind: "noop"}, st)
	if err != nil {
		t.Fatal(err)
	}
	first := res.Task
	claimNone(t, s, "w2")
	c.Advance(time.Minute + time.Second)
	again := claimOne(t, s, "w2", time.Minute)
	if again.ID != first.ID || again.Attempt != 2 || again.LeaseToken <= first.LeaseToken {
		t.Fatalf("claimed again: id %d attempt %d token %d; first token %d", again.ID, again.Attempt, again.LeaseToken, first.LeaseToken)
	}
	if err := s.Succeed(ctx, claims.LeaseOf(first), raw(`{}`)); err == nil {
		t.Fatal("the first lease still wrote after its task was claimed again")
	}
}

// What may not run now is queued as Enqueue queues it, and the slot given
// back (or not asked for): a task due later, a capped tenant's, a keyed
// duplicate, one behind a due task the pool would take or beside an
// expired lease, an enqueue in a transaction, a pool with no slot.
func TestEnqueueStartQueuesWhatMayNotRunNow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClock()
	db, s := pinnedDB(t, c)
	if _, err := db.Exec(ctx, `INSERT INTO tenant_shares (tenant, weight, max_running, source) VALUES ('capped', 1, 5, 'operator')`); err != nil {
		t.Fatal(err)
	}
	st := &fakeStarter{}
	queued := func(what string, p claims.EnqueueParams, starter claims.Starter) *agentledger.Task {
		t.Helper()
		if p.Kind == "" {
			p.Kind = "noop"
		}
		res, err := s.EnqueueStart(ctx, p, starter)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if res.Task.State == agentledger.StateRunning {
			t.Fatalf("%s: started; want it queued", what)
		}
		return res.Task
	}

	queued("due in an hour", claims.EnqueueParams{Queue: "later", RunAt: time.Now().Add(time.Hour)}, st)
	if asked, _, _ := st.counts(); asked != 0 {
		t.Fatalf("a task due later asked for a slot")
	}
	queued("capped tenant", claims.EnqueueParams{Queue: "capped", Tenant: "capped"}, st)
	if _, started, released := st.counts(); started != 0 || released != 1 || st.queued != 1 {
		t.Fatalf("capped tenant: started %d released %d queued %d; want the slot given back, the pool told", started, released, st.queued)
	}

	first, err := s.EnqueueStart(ctx, claims.EnqueueParams{Kind: "noop", SubmissionKey: "k"}, st)
	if err != nil || first.Task.State != agentledger.StateRunning {
		t.Fatalf("keyed: %v %+v", err, first)
	}
	dup, err := s.EnqueueStart(ctx, claims.EnqueueParams{Kind: "noop", SubmissionKey: "k"}, st)
	if err != nil || !dup.Duplicate || dup.Task.ID != first.Task.ID {
		t.Fatalf("the same key again: %v %+v", err, dup)
	}
	if _, started, released := st.counts(); started != 1 || released != 2 || st.queued != 1 {
		t.Fatalf("duplicate: started %d released %d queued %d; want its slot given back, nothing queued", started, released, st.queued)
	}

	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	asked, _, _ := st.counts()
	if res, err := claims.New(tx).EnqueueStart(ctx, claims.EnqueueParams{Kind: "noop", Queue: "tx"}, st); err != nil || res.Task.State != agentledger.StateQueued {
		t.Fatalf("in a transaction: %v %+v", err, res)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if now, _, _ := st.counts(); now != asked {
		t.Fatal("an enqueue in a transaction asked for a slot: its task exists only once the caller commits")
	}

	// What is ahead of the new task for this pool (kinds noop, no
	// capabilities): a due task it would take, more runnable tasks than
	// the look reads, an expired lease. A task due later, or one the pool
	// would not take, is not.
	started := func(what string, p claims.EnqueueParams) {
		t.Helper()
		p.Kind = "noop"
		if res, err := s.EnqueueStart(ctx, p, st); err != nil || res.Task.State != agentledger.StateRunning {
			t.Fatalf("%s: %v, %+v; want it started", what, err, res.Task)
		}
	}
	started("beside a task due later", claims.EnqueueParams{Queue: "later"})
	started("beside another tenant's due later", claims.EnqueueParams{Queue: "later", Tenant: "zed"})
	enqueue(t, s, claims.EnqueueParams{Queue: "strays", Kind: "ghost"})
	enqueue(t, s, claims.EnqueueParams{Queue: "strays", Needs: []string{"tool:x"}})
	started("beside due tasks the pool would not take", claims.EnqueueParams{Queue: "strays"})
	enqueue(t, s, claims.EnqueueParams{Queue: "busy", Tenant: "zed", Priority: 50})
	queued("behind a due task the pool would take", claims.EnqueueParams{Queue: "busy"}, st)
	crowd := make([]claims.EnqueueParams, 65)
	for i := range crowd {
		crowd[i] = claims.EnqueueParams{Kind: "noop", Queue: "crowd", RunAt: time.Now().Add(time.Hour)}
	}
	if _, err := s.EnqueueBatch(ctx, crowd); err != nil {
		t.Fatal(err)
	}
	queued("behind more runnable tasks than the look reads", claims.EnqueueParams{Queue: "crowd"}, st)
	if _, err := db.Exec(ctx, `UPDATE tasks SET lease_expires_at = $1 WHERE state = 'running' AND queue = 'default'`, c.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	queued("beside an expired lease", claims.EnqueueParams{}, st)
	if st.queued != 4 {
		t.Fatalf("the pool was told of %d queued tasks, want 4", st.queued)
	}

	st.full = true
	queued("no slot", claims.EnqueueParams{Queue: "empty"}, st)
	if st.queued != 5 {
		t.Fatalf("no slot: the pool was told of %d queued tasks, want 5", st.queued)
	}
	queued("no starter", claims.EnqueueParams{Queue: "none"}, nil)
	if _, err := s.EnqueueStart(ctx, claims.EnqueueParams{Kind: "bad kind"}, st); err == nil {
		t.Fatal("a bad kind was enqueued")
	}
}
