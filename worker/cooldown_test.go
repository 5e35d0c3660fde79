package worker_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/worker"
)

// claimLog is an Observer that remembers every claim's size.
type claimLog struct {
	mu    sync.Mutex
	sizes []int
}

func (c *claimLog) Claimed(_ string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sizes = append(c.sizes, n)
}
func (c *claimLog) LeaseLost()                                            {}
func (c *claimLog) Finished(string, agentledger.TaskState, time.Duration) {}

func (c *claimLog) since(i int) []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]int(nil), c.sizes[i:]...)
}

// Tasks notified within the cooldown after a claim share the next claim,
// which waits out the cooldown.
func TestClaimCooldownGathersArrivals(t *testing.T) {
	t.Parallel()
	const cooldown = 300 * time.Millisecond
	db := testdb.New(t)
	s := claims.New(db)
	type start struct {
		id int64
		at time.Time
	}
	started := make(chan start, 16)
	log := &claimLog{}
	runPool(t, db, worker.Config{PollInterval: time.Hour, ClaimCooldown: cooldown, Observer: log,
		Handlers: map[string]worker.Handler{
			"noop": worker.HandlerFunc(func(_ context.Context, task *agentledger.Task) (json.RawMessage, error) {
				started <- start{task.ID, time.Now()}
				return nil, nil
			}),
		}})

	// A first task once LISTEN is in place (as TestNotifyWakesIdlePool):
	// its claim is the one the cooldown counts from.
	var first start
	for i := 0; first.id == 0; i++ {
		enqueue(t, s, "noop", `{}`)
		select {
		case first = <-started:
		case <-time.After(2 * time.Second):
			if i == 5 {
				t.Fatal("no task started within 10s: NOTIFY did not wake the pool")
			}
		}
	}
	mark := len(log.since(0))

	want := map[int64]bool{}
	for range 3 {
		want[enqueue(t, s, "noop", `{}`).ID] = true
	}
	var last start
	for len(want) > 0 {
		st := recv(t, started, "the three tasks to start")
		if !want[st.id] {
			continue // an earlier task of the first phase
		}
		delete(want, st.id)
		last = st
	}
	if got := log.since(mark); len(got) != 1 || got[0] != 3 {
		t.Errorf("claims after the first task: %v, want one claim of all 3 tasks", got)
	}
	// The claim ended before the first task started, so the next one may
	// come up to that gap earlier than the cooldown; not much earlier.
	if gap := last.at.Sub(first.at); gap < cooldown-50*time.Millisecond {
		t.Errorf("the next claim came %v after the first task started, within the %v cooldown", gap, cooldown)
	}
}

// A claim that fills every free slot but not its batch leaves the loop
// waiting for a slot, not for news: with no notification and no poll to
// come, a task enqueued after that claim starts when a slot frees.
func TestASlotFreedAfterAClaimOfTheFreeSlotsClaimsAgain(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	s := claims.New(db)
	started := make(chan int64, 8)
	release := make(chan struct{})
	for range 3 {
		enqueue(t, s, "hold", `{}`)
	}
	stop := runPool(t, db, worker.Config{Concurrency: 2, PollOnly: true, PollInterval: time.Hour,
		Handlers: map[string]worker.Handler{
			"hold": worker.HandlerFunc(func(ctx context.Context, task *agentledger.Task) (json.RawMessage, error) {
				started <- task.ID
				select {
				case <-release:
				case <-ctx.Done():
				}
				return nil, nil
			}),
		}})
	defer stop()
	recv(t, started, "the first task of the first claim (a full batch of 2)")
	recv(t, started, "the second task of the first claim")

	release <- struct{}{}
	recv(t, started, "the third task, claimed alone into the one freed slot (1 of a batch of 2)")
	d := enqueue(t, s, "hold", `{}`) // PollOnly: nothing tells the pool
	release <- struct{}{}
	if got := recv(t, started, "the task enqueued after, once a slot freed"); got != d.ID {
		t.Fatalf("task %d started, want %d", got, d.ID)
	}
	close(release)
}
