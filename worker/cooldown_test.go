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
