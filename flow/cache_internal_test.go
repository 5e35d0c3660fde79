package flow

import (
	"context"
	"testing"
)

// A change announced while the cache was being read is not lost: what
// that read found is not kept, and the next get reads again.
func TestReadCacheKeepsNoReadOlderThanADrop(t *testing.T) {
	c := newReadCache[int]()
	ctx := context.Background()
	reads := 0
	read := func(context.Context) (map[string]int, error) {
		reads++
		if reads == 1 {
			c.drop() // announced while the first read ran
		}
		return map[string]int{"n": reads}, nil
	}
	if m, err := c.get(ctx, read); err != nil || m["n"] != 1 {
		t.Fatalf("first get: %v %v", m, err)
	}
	if m, err := c.get(ctx, read); err != nil || m["n"] != 2 {
		t.Fatalf("second get: %v %v, want a new read", m, err)
	}
	if m, err := c.get(ctx, read); err != nil || m["n"] != 2 || reads != 2 {
		t.Fatalf("third get: %v %v after %d reads, want the kept second", m, err, reads)
	}
}

// edit never writes the map a caller holds.
func TestReadCacheEditCopies(t *testing.T) {
	c := newReadCache[int]()
	held, _ := c.get(context.Background(), func(context.Context) (map[string]int, error) { return map[string]int{"a": 1}, nil })
	c.edit(func(m map[string]int) { m["a"] = 2 })
	if held["a"] != 1 {
		t.Fatal("edit wrote the map a caller held")
	}
	if m, _ := c.get(context.Background(), nil); m["a"] != 2 {
		t.Fatalf("after edit: %v", m)
	}
}
