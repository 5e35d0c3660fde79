package registry_test

import (
	"sync"
	"testing"
	"time"

	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/registry"
)

// clock is a pinned database clock that tests move by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock {
	return &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// pinnedStore returns a store on a fresh database whose clock is c.
func pinnedStore(t *testing.T, c *clock) *registry.Store {
	t.Helper()
	s := registry.New(testdb.New(t))
	s.Now = c.Now
	return s
}
