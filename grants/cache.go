package grants

import (
	"context"
	"sync"
	"time"
)

// Channel is notified, with the tenant as payload, by every grant change
// (in the statement that makes it, so a committed change is always
// notified).
const Channel = "agentledger_grants"

// unlistenedFor is how long the cache keeps a grant it read while no
// LISTEN session is up (--pgbouncer, or the session lost): no notification
// drops it then, so this bounds how long a revoke goes unseen, and it makes
// the grant checked at every effect cost one query per tenant a second
// instead of one per effect.
const unlistenedFor = time.Second

// Cache is a Source that keeps the grants it read. While a LISTEN session
// on Channel is up, it keeps them until a change drops the tenant's entry
// when its notification arrives, so that an effect costs no query; while
// no session is up, for at most unlistenedFor (one second). Give Changed
// and Listening to the session's owner (worker.Config.Channels and
// Listening): notifications on that session arrive in commit order, so a
// grant revoked before a task was queued is dropped before the task's
// notification wakes a claim.
//
// The grants it returns are shared: callers must not change them.
type Cache struct {
	store *Store
	now   func() time.Time // time.Now; tests set it

	mu       sync.Mutex
	live     bool   // a LISTEN session is up
	epoch    uint64 // moves on at every invalidation
	byTenant map[string]cached
}

// cached is a grant and when its read began.
type cached struct {
	g    *Grant
	read time.Time
}

// NewCache returns a cache over store, which keeps what it reads for a
// second until Listening says a session is up.
func NewCache(store *Store) *Cache {
	return &Cache{store: store, now: time.Now, byTenant: map[string]cached{}}
}

// For returns tenant's grant, from the cache when it holds it.
func (c *Cache) For(ctx context.Context, tenant string) (*Grant, error) {
	c.mu.Lock()
	if e, ok := c.byTenant[tenant]; ok && (c.live || c.now().Sub(e.read) < unlistenedFor) {
		c.mu.Unlock()
		return e.g, nil
	}
	epoch := c.epoch
	c.mu.Unlock()
	read := c.now() // before the read: what it returns is no older
	g, err := c.store.For(ctx, tenant)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	// A change notified while we read may be newer than what we read.
	if c.epoch == epoch {
		c.byTenant[tenant] = cached{g, read}
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
