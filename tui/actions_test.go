package tui

import (
	"testing"

	"github.com/agentledger/agentledger"
)

// The refusals use agentctl's wording.
func TestActionRefusals(t *testing.T) {
	t.Parallel()
	store := newFakeStore(2, epoch)
	store.tasks = append(store.tasks, &agentledger.Task{ID: 3, Tenant: "acme", Queue: "default", Kind: "echo",
		State: agentledger.StateQueued, UpdatedAt: epoch})
	d := newDriver(t, store, Options{}, 100, 30)
	status := func(want string) {
		t.Helper()
		if got := d.app().status; got != want {
			t.Errorf("status %q, want %q", got, want)
		}
	}
	d.keys("r") // task 3, queued
	status("task 3 is queued: only a task no worker holds (succeeded, dead, cancelled or needs_attention) can be replayed")
	d.keys("R")
	status("task 3 is queued: only a task no worker holds (succeeded, dead, cancelled or needs_attention) can be re-run")
	d.keys("u")
	status("task 3 is queued: only a succeeded, dead, cancelled or needs_attention task can be compensated")
	d.keys("down", "down", "c") // task 1, succeeded
	status("task 1 already finished (succeeded): nothing to cancel")
	d.keys("u") // the fake journal holds nothing to undo
	status("task 1 (succeeded): nothing to compensate: none of its completed effects declared a compensation")
}
