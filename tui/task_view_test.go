package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/operator"
	"github.com/charmbracelet/x/ansi"
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

// A payload line wider than the screen is cut where the screen ends, and
// the cut is marked: a cut URL must not pass for a whole one.
func TestOverviewMarksACutPayloadLine(t *testing.T) {
	e := &env{keys: DefaultKeyMap(), styles: DefaultStyles(), opts: Options{}.withDefaults()}
	url := "http://127.0.0.1:7450/demo/charges/${self.body.id}/refund?reason=order-8-not-shipped"
	task := &agentledger.Task{ID: 4, State: agentledger.StateSucceeded, RunAt: time.Now(), MaxAttempts: 25,
		Payload: []byte(`{"url":"` + url + `"}`)}
	m := taskModel{env: e, detail: &Detail{Detail: operator.Detail{Task: task}}, width: 80}
	got := m.overview()
	if strings.Contains(got, url) || !strings.Contains(got, `"url": "http://127.0.0.1:7450/demo/charges/`) || !strings.Contains(got, "…") {
		t.Fatalf("want the URL cut and marked at 80 columns:\n%s", got)
	}
	for _, l := range strings.Split(got, "\n") {
		if w := ansi.StringWidth(l); w > 80 {
			t.Fatalf("a line of %d cells at 80 columns: %q", w, l)
		}
	}
}

// A deferred attempt's number is in parentheses, and the legend says why
// the next claim takes it again; without a deferral the legend says
// nothing of it.
func TestAttemptsMarkADeferral(t *testing.T) {
	e := &env{keys: DefaultKeyMap(), styles: DefaultStyles(), opts: Options{}.withDefaults()}
	start := time.Now().Add(-time.Minute)
	end := start.Add(time.Second)
	task := &agentledger.Task{ID: 7, State: agentledger.StateSucceeded, RunAt: start, MaxAttempts: 25, Generation: 1}
	atts := []agentledger.Attempt{
		{TaskID: 7, Attempt: 1, Generation: 1, Worker: "w", Token: 10, StartedAt: start, EndedAt: &end,
			Outcome: agentledger.OutcomeDeferred, Error: "http:https://billing.internal:8080: rate limit"},
		{TaskID: 7, Attempt: 1, Generation: 1, Worker: "w", Token: 11, StartedAt: end, EndedAt: &end, Outcome: agentledger.OutcomeSucceeded},
	}
	m := taskModel{env: e, detail: &Detail{Detail: operator.Detail{Task: task, Attempts: atts}}, width: 200}
	got := ansi.Strip(m.attempts())
	if !strings.Contains(got, "(N): deferred, not counted.") || !strings.Contains(got, "1   (1)     w") || !strings.Contains(got, "1   1       w") {
		t.Fatalf("with a deferral:\n%s", got)
	}
	m.detail.Attempts = atts[1:]
	if got := ansi.Strip(m.attempts()); strings.Contains(got, "deferred") || strings.Contains(got, "(1)") {
		t.Fatalf("without one:\n%s", got)
	}
}

// With no failed delivery the LAST ERROR column is empty, and its header
// still shows whole at 80 columns: a column of the drop list gives way.
func TestNotificationsHeaderWholeAt80(t *testing.T) {
	e := &env{keys: DefaultKeyMap(), styles: DefaultStyles(), opts: Options{}.withDefaults()}
	task := &agentledger.Task{ID: 1, State: agentledger.StateSucceeded, RunAt: time.Now(), MaxAttempts: 5, Generation: 1}
	ns := []operator.Notification{
		{ID: 2, Generation: 1, Event: "message", Step: "tool/2", Channel: "demo", State: "delivered"},
		{ID: 3, Generation: 1, Event: "succeeded", Rule: "demo", Channel: "demo", State: "delivered"},
	}
	journal := []operator.Effect{{Operation: "notify.post", Step: "tool/2", ExternalRef: "notifications.jsonl:7"}}
	m := taskModel{env: e, detail: &Detail{Detail: operator.Detail{Task: task, Notifications: ns, Journal: journal}}, width: 80}
	got := ansi.Strip(m.notifications())
	if !strings.Contains(got, "LAST ERROR") || strings.Contains(got, "LAST ER…") {
		t.Fatalf("the header cut at 80 columns:\n%s", got)
	}
	if !strings.Contains(got, "notifications.jsonl:7") {
		t.Fatalf("the ref went:\n%s", got)
	}
}
