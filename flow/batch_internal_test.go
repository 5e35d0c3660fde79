package flow

import (
	"testing"
	"time"
)

// A batch hands out each call no earlier than its theoretical arrival time
// less the tolerance, drops those late by more than batchWindow, and sizes
// the next booking by what was spent.
func TestBatchTake(t *testing.T) {
	t0 := time.Now()
	e := 5 * time.Millisecond
	b := &batch{e: e, start: t0, n: 10, next: 1, spent: 1}
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	if w, ok := b.take(at(0)); w != e || !ok {
		t.Fatalf("call 1 at once: wait %v, %v; want %v (its time)", w, ok, e)
	}
	if w, ok := b.take(at(e)); w != 0 || !ok {
		t.Fatalf("call 1 on time: wait %v, %v", w, ok)
	}
	// Call 2 (due at 2e) is late by more than the window: dropped; call 3
	// (due at 3e) is late by less: spent.
	if w, ok := b.take(at(2*e + batchWindow + time.Nanosecond)); w != 0 || !ok || b.next != 4 || b.dropped != 1 {
		t.Fatalf("after the window: wait %v, %v, next %d, %d dropped; want call 2 dropped, 3 spent", w, ok, b.next, b.dropped)
	}
	if w, ok := b.take(at(9*e + batchWindow + time.Nanosecond)); ok {
		t.Fatalf("every call late: wait %v, still a call", w)
	}
	if n := b.nextSize(); n != 3 {
		t.Errorf("next booking of %d calls, want 3 (the calls spent)", n)
	}

	// The tolerance (a burst of 3) lets calls through up to two emissions
	// early; a batch spent whole doubles the next booking, up to maxBatch.
	b = &batch{e: e, tol: 2 * e, start: t0, n: 3, next: 1, spent: 1}
	for i := 1; i < 3; i++ {
		if w, ok := b.take(at(0)); w != 0 || !ok {
			t.Fatalf("call %d of the burst: wait %v, %v", i, w, ok)
		}
	}
	if _, ok := b.take(at(0)); ok {
		t.Fatal("a call beyond the batch")
	}
	if n := b.nextSize(); n != 6 {
		t.Errorf("next booking of %d calls, want 6", n)
	}
	b = &batch{e: e, start: t0, n: maxBatch, next: maxBatch, spent: maxBatch}
	if n := b.nextSize(); n != maxBatch {
		t.Errorf("next booking of %d calls, want at most %d", n, maxBatch)
	}
}

// A batch runs low with half its calls left, or half a batch window
// before its last call is dropped.
func TestBatchLow(t *testing.T) {
	t0 := time.Now()
	e := time.Millisecond
	b := &batch{e: e, start: t0, n: 8, next: 3}
	if b.low(t0) {
		t.Error("5 of 8 calls left: low")
	}
	b.next = 4
	if !b.low(t0) {
		t.Error("4 of 8 calls left: not low")
	}
	b.next = 0
	last := t0.Add(7*e + batchWindow) // when the last call is dropped
	if b.low(last.Add(-batchWindow/2 - time.Nanosecond)) {
		t.Error("low before the last half window")
	}
	if !b.low(last.Add(-batchWindow / 2)) {
		t.Error("not low half a window before the last call is dropped")
	}
}
