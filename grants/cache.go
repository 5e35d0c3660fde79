package grants

import (
	"context"
	"sync"
)

// Channel is notified, with the tenant as payload, by every grant change
// (in the statement that makes it, so a committed change is always
// notified).
const Channel = "agentledger_grants"

// Cache is a Source that keeps the grants it read while a LISTEN session on
// Channel is up, so that an attempt costs no query: a change drops the
// tenant's entry when its notification arrives, and while no session is up
// every read goes to the store. Give Changed and Listening to the session's
// owner (worker.Config.Channels and Listening): notifications on that
// session arrive in commit order, so a grant revoked before a task was
// queued is dropped before the task's notification wakes a claim.
//
// The grants it returns are shared: callers must not change them.
type Cache struct {
	store *Store

	mu       sync.Mutex
	live     bool   // a LISTEN session is up
	epoch    uint64 // moves on at every invalidation
	byTenant map[string]*Grant
}

// NewCache returns a cache over store, which reads through until Listening
// says a session is up.
func NewCache(store *Store) *Cache {
	return &Cache{store: store, byTenant: map[string]*Grant{}}
}

// For returns tenant's grant, from the cache when it holds it.
func (c *Cache) For(ctx context.Context, tenant string) (*Grant, error) {
	c.mu.Lock()
	if g, ok := c.byTenant[tenant]; ok && c.live {
		c.mu.Unlock()
		return g, nil
	}
	epoch := c.epoch
	c.mu.Unlock()
	g, err := c.store.For(ctx, tenant)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	// A change notified while we read may be newer than what we read.
	if c.live && c.epoch == epoch {
		c.byTenant[tenant] = g
	}
	c.mu.Unlock()
	return g, nil
}

// Changed drops tenant's entry: its grant changed.
func (c *Cache) Changed(tenant string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.byTenant, tenant)
	c.epoch++
}

// Listening says whether a LISTEN session on Channel is up; either way
// what the cache held may be stale, and is dropped.
func (c *Cache) Listening(up bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.live = up
	clear(c.byTenant)
	c.epoch++
}
