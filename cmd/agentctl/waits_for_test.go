package main

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/agentledger/agentledger/waits"
)

// A children wait says how many of its children ended, and that none
// started yet when its task has none.
func TestWaitsForCountsChildren(t *testing.T) {
	w := waits.Wait{ID: 3, Kind: waits.KindChildren, Spec: json.RawMessage(`{"mode":"all","on_failure":"fail"}`)}
	counts := map[int64]waits.ChildCount{3: {Children: 2, Ended: 1}}
	if got, want := waitsFor(w, counts), "every child (all, on failure fail): 1 of 2 ended"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	w.State = waits.Waiting
	if got, want := waitsFor(w, nil), "every child (all, on failure fail): none started yet"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	w.State = waits.Ended
	if got, want := waitsFor(w, nil), "every child (all, on failure fail): no children"; got != want {
		t.Errorf("an ended wait: got %q, want %q", got, want)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	timer := waits.Wait{Kind: waits.KindTimer, CreatedAt: at, Deadline: at.Add(12 * time.Minute), State: waits.Ended}
	if got := waitsFor(timer, nil); got != "a timer of 12m" {
		t.Errorf("a timer: %q", got)
	}
	sig := waits.Wait{Kind: waits.KindSignal, Signal: "payment.settled", Key: "order-7"}
	if got := waitsFor(sig, counts); got != "payment.settled key order-7" {
		t.Errorf("a signal wait: %q", got)
	}
}
