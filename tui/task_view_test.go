package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/operator"
)

// A queued task that waits for a limit or a breaker says so and why; once
// it runs the reason is gone.
func TestOverviewSaysWhyATaskWaits(t *testing.T) {
	e := &env{keys: DefaultKeyMap(), styles: DefaultStyles(), opts: Options{}.withDefaults()}
	const why = "http:https://billing.internal:8080: circuit open until 12:04:31 UTC, 14 failures in 60s"
	task := &agentledger.Task{ID: 7, State: agentledger.StateQueued, WaitReason: why, RunAt: time.Now(), MaxAttempts: 25}
	m := taskModel{env: e, detail: &Detail{Detail: operator.Detail{Task: task}}, width: 200}
	if got := m.overview(); !strings.Contains(got, "Waiting") || !strings.Contains(got, why) {
		t.Fatalf("queued and waiting:\n%s", got)
	}
	task.State = agentledger.StateRunning
	if got := m.overview(); strings.Contains(got, "Waiting") {
		t.Fatalf("running:\n%s", got)
	}
}
