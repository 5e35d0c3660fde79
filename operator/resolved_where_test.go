package operator_test

import (
	"testing"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/operator"
)

// A parked task a resolution requeued went back, whatever a worker made of
// it by the time it is read: the console said "the task stays running"
// of one claimed at once. One it did not requeue stays, in any state: the
// console used to read "parked" when its dialog opened, and said a task
// another operator had requeued meanwhile "went back to queued". The
// console and agentctl resolve say it alike.
func TestResolvedWhereSaysAParkedTaskWentBack(t *testing.T) {
	for _, c := range []struct {
		state    agentledger.TaskState
		requeued bool
		want     string
	}{
		{agentledger.StateQueued, true, "the task went back to queued"},
		{agentledger.StateCompensating, true, "the task went back to compensating"},
		{agentledger.StateRunning, true, "the task went back to the queue, and a worker has it already"},
		{agentledger.StateSucceeded, true, "the task went back to the queue, and is succeeded now"},
		{agentledger.StateDead, false, "the task stays dead"},
		{agentledger.StateRunning, false, "the task stays running"},
		{agentledger.StateQueued, false, "the task stays queued"},
	} {
		if got := (operator.ResolveOutcome{Task: &agentledger.Task{State: c.state}, Requeued: c.requeued}).Where(); got != c.want {
			t.Errorf("%s (requeued %v): %q, want %q", c.state, c.requeued, got, c.want)
		}
	}
}
