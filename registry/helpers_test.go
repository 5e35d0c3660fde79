package registry_test

import (
	"testing"

	"github.com/agentledger/agentledger/internal/test/testclock"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/registry"
)

// clock is a pinned database clock that tests move by hand.
// clock is the tests' hand-moved clock.
type clock = testclock.Clock

func newClock() *clock { return testclock.New() }

// pinnedStore returns a store on a fresh database whose clock is c.
func pinnedStore(t *testing.T, c *clock) *registry.Store {
	t.Helper()
	s := registry.New(testdb.New(t))
	s.Now = c.Now
	return s
}
