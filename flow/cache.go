package flow

import (
	"context"
	"maps"
	"sync"
	"time"
)

// readCache keeps a map read from the database: fresh for CacheFor, then
// served stale for as long again while one caller reads it anew (so that
// no call of the daemon waits for that read), then unusable: callers wait
// for a read, so limits the database cannot give fail closed. A change
// announced by another daemon drops it at once. The map handed out is
// never written: edit replaces it with an edited copy.
type readCache[V any] struct {
	mu   sync.Mutex
	m    map[string]V // nil: never read, dropped, or too old
	read time.Time
	gen  uint64        // counts drops: a read that began before one is not kept
	sem  chan struct{} // one read at a time; a waiter may leave with its context
}

func newReadCache[V any]() *readCache[V] { return &readCache[V]{sem: make(chan struct{}, 1)} }

// get returns the map, reading it with read when it is not fresh.
func (c *readCache[V]) get(ctx context.Context, read func(context.Context) (map[string]V, error)) (map[string]V, error) {
	m, fresh := c.current()
	switch {
	case fresh:
		return m, nil
	case m != nil:
		select {
		case c.sem <- struct{}{}:
		default:
			return m, nil // another caller reads it
		}
	default:
		select {
		case c.sem <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	defer func() { <-c.sem }()
	if m, fresh := c.current(); fresh { // read by another caller meanwhile
		return m, nil
	}
	c.mu.Lock()
	gen := c.gen
	c.mu.Unlock()
	m, err := read(ctx)
	if err != nil {
		return nil, err
	}
	if m == nil {
		m = map[string]V{}
	}
	c.mu.Lock()
	if c.gen == gen { // else a change was announced during the read: read again next time
		c.m, c.read = m, time.Now()
	}
	c.mu.Unlock()
	return m, nil
}

func (c *readCache[V]) current() (m map[string]V, fresh bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch age := time.Since(c.read); {
	case c.m == nil || age >= 2*CacheFor:
		return nil, false
	case age < CacheFor:
		return c.m, true
	}
	return c.m, false
}

// edit applies f to a copy of the map, if it was read, and keeps the copy.
func (c *readCache[V]) edit(f func(map[string]V)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		return
	}
	m := maps.Clone(c.m)
	f(m)
	c.m = m
}

// drop forgets the map: the next get reads it.
func (c *readCache[V]) drop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m = nil
	c.gen++
}

// age makes the map d old (for tests).
func (c *readCache[V]) age(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.read = time.Now().Add(-d)
}
