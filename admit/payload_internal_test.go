package admit

import (
	"fmt"
	"testing"
	"time"
)

// The cache of published schemas stays bounded by what was asked within
// its time: a stream of submissions naming new queues does not grow it
// for the life of the process.
func TestSchemaCacheDropsEntriesPastTheirTime(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c := &schemaCache{now: func() time.Time { return now }}
	for i := range 10 * schemaSweepAt {
		c.put([2]string{"invoice", fmt.Sprint("q", i)}, nil)
		now = now.Add(schemaTTL / 100) // 100 puts within a TTL
	}
	if n := len(c.known); n > schemaSweepAt+100 {
		t.Fatalf("the cache holds %d entries after %d puts, 100 of them within its time: want at most %d", n, 10*schemaSweepAt, schemaSweepAt+100)
	}
	// Below the sweep's size, nothing is dropped: a small fleet's entries
	// are simply looked up again past their time.
	c = &schemaCache{now: func() time.Time { return now }}
	for i := range 10 {
		c.put([2]string{"invoice", fmt.Sprint("q", i)}, nil)
		now = now.Add(schemaTTL)
	}
	if n := len(c.known); n != 10 {
		t.Fatalf("the cache holds %d entries, want 10", n)
	}
}

// A burst of entries all within their time is not swept at every insert:
// the next sweep waits until the cache has doubled.
func TestSchemaCacheSweepsABurstSeldom(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c := &schemaCache{now: func() time.Time { return now }}
	for i := range 8 * schemaSweepAt {
		c.put([2]string{"invoice", fmt.Sprint("q", i)}, nil)
	}
	if n := len(c.known); n != 8*schemaSweepAt {
		t.Fatalf("the cache holds %d entries, want all %d (none past its time)", n, 8*schemaSweepAt)
	}
	if c.sweep != 8*schemaSweepAt { // swept at 1,024, 2,048 and 4,096 entries
		t.Fatalf("the next sweep is at %d entries, want %d: swept more often than at each doubling", c.sweep, 8*schemaSweepAt)
	}
}
