package tui

import (
	"strings"
	"testing"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/operator"
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
	status("task 3 is queued: only a task no worker holds (succeeded, dead, cancelled, needs_attention or compensated) can be re-run")
	d.keys("u")
	status("task 3 is queued: only a succeeded, dead, cancelled or needs_attention task can be compensated")
	d.keys("down", "down", "c") // task 1, succeeded
	status("task 1 already finished (succeeded): nothing to cancel")
	d.keys("u") // the fake journal holds nothing to undo
	status("task 1 (succeeded): nothing to compensate: none of its completed effects declared a compensation")
	d.keys("v") // from the list, a task that cannot hold an effect to resolve
	status("task 1 is succeeded: nothing to resolve (an effect of unknown outcome parks its task in needs_attention)")
	d.keys("enter", "v")
	status("task 1 has no effect of unknown outcome: every effect of its journal completed or failed, so nothing is to resolve")
}

// r on a compensated task explains as agentctl replay does, and R offers
// the re-run that is left.
func TestCompensatedRefusal(t *testing.T) {
	t.Parallel()
	store := newFakeStore(0, epoch)
	store.tasks = append(store.tasks, &agentledger.Task{ID: 1, Tenant: "acme", Queue: "default", Kind: "steps",
		State: agentledger.StateCompensated, Compensation: "failed", UpdatedAt: epoch})
	d := newDriver(t, store, Options{}, 100, 30)
	d.keys("r")
	if got, want := d.app().status, operator.ReplayCompensated(1).Error(); got != want || !strings.Contains(got, "re-run it as a new intent") {
		t.Errorf("status %q, want %q", got, want)
	}
	d.keys("R")
	wantStatus(t, d, "Re-run task 1 as a new intent?")
	if v := d.view(); strings.Contains(v, "replay instead") {
		t.Errorf("the re-run of a compensated task suggests a replay:\n%s", v)
	}
}

// r on a task parked in its compensation says, as agentctl replay does,
// that the replay continues the compensation and runs nothing of the
// forward path.
func TestReplayOfAParkedCompensation(t *testing.T) {
	t.Parallel()
	store := newFakeStore(0, epoch)
	store.tasks = append(store.tasks, &agentledger.Task{ID: 1, Tenant: "acme", Queue: "default", Kind: "steps",
		State: agentledger.StateNeedsAttention, Compensation: "failed", UpdatedAt: epoch})
	d := newDriver(t, store, Options{}, 100, 30)
	d.keys("r")
	wantStatus(t, d, "Replay task 1?")
	v := d.view()
	for _, want := range []string{"continues the task's compensation, not its forward path", "Nothing of the forward path runs again."} {
		if !strings.Contains(strings.Join(strings.Fields(v), " "), want) {
			t.Errorf("the replay dialog lacks %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "run for the first time") {
		t.Errorf("the replay dialog of a compensation promises forward effects:\n%s", v)
	}
}
