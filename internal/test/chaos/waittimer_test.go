package chaos

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger/agentledgertest/downstream"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/waits"
)

// TestTimerDueWhileEveryDaemonIsDown is issue 36's drill: a task sleeps on
// a durable timer; both daemons are SIGKILLed while it sleeps, and the
// timer comes due with none running. When one daemon returns the timer
// fires, once: the wait step is recorded once and the next step's POST
// happens once.
func TestTimerDueWhileEveryDaemonIsDown(t *testing.T) {
	skipShort(t)
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	down := downstream.New()
	t.Cleanup(down.Close)

	// The timer is short, but long enough to be sure both daemons are
	// dead before it is due (checked below).
	payload := sprintf(`{"steps":[{"tool":"wait_timer","args":{"for":"4s"}},
		{"tool":"http_request","args":{"method":"POST","url":"%s/reminders","body":{"remind":"${steps.0.body.due}"}}}]}`, down.URL)
	r, err := claims.New(w.db).Enqueue(ctx, claims.EnqueueParams{Kind: "steps", Payload: json.RawMessage(payload), MaxAttempts: 5})
	must(t, err)
	task := r.Task.ID

	daemons := []*daemon{agentdSlot(w, "d1", down.URL), agentdSlot(w, "d2", down.URL)}
	for _, d := range daemons {
		must(t, d.start())
	}
	defer stopAll(t, daemons)
	waitFor(t, "the task sleeping on its timer", time.Minute, func() (bool, string) {
		st := taskState(t, w, task)
		return st == "waiting", "task " + st
	})
	for _, d := range daemons {
		d.kill()
	}
	ws := waits.NewStore(w.db)
	timers, err := ws.List(ctx, waits.ListParams{TaskID: task})
	must(t, err)
	var early bool
	must(t, w.db.QueryRow(ctx, `SELECT deadline > now() FROM waits WHERE task_id = $1`, task).Scan(&early))
	if len(timers) != 1 || timers[0].Kind != waits.KindTimer || !early {
		t.Fatalf("with every daemon dead the task's waits are %+v (not yet due: %v); want one timer, not yet due", timers, early)
	}
	timer := timers[0]
	waitFor(t, "the timer due with no daemon up", time.Minute, func() (bool, string) {
		var due bool
		must(t, w.db.QueryRow(ctx, `SELECT deadline <= now() FROM waits WHERE id = $1`, timer.ID).Scan(&due))
		return due, "not yet due"
	})
	if got, err := ws.Get(ctx, "", timer.ID); err != nil || got.State != waits.Waiting || down.Hits() != 0 {
		t.Fatalf("the timer due with no daemon: %+v %v, %d requests downstream; want it still waiting, nothing sent", got, err, down.Hits())
	}

	must(t, daemons[0].start())
	waitFor(t, "the task succeeded", 2*time.Minute, func() (bool, string) {
		st := taskState(t, w, task)
		return st == "succeeded", "task " + st
	})
	daemons[0].stop()

	fired, err := ws.Get(ctx, "", timer.ID)
	must(t, err)
	var res struct {
		FiredAt time.Time `json:"fired_at"`
		Due     time.Time `json:"due"`
	}
	if err := json.Unmarshal(fired.Result, &res); err != nil || fired.State != waits.Done || fired.EndedBy != "timer" ||
		!res.Due.Equal(timer.Deadline) || res.FiredAt.Before(res.Due) {
		t.Fatalf("the timer after the restart: %+v (result %s, %v); want done by the timer, fired after %s", fired, fired.Result, err, timer.Deadline)
	}
	if n := rowCount(t, w, "waits"); n != 1 {
		t.Errorf("%d waits recorded, want the one timer", n)
	}
	var rows int
	var state, result string
	must(t, w.db.QueryRow(ctx, `SELECT count(*), min(state), coalesce(min(result::text), '') FROM ledger
		WHERE task_id = $1 AND step_path = 'tool/0'`, task).Scan(&rows, &state, &result))
	if rows != 1 || state != "completed" || !strings.Contains(result, "fired_at") {
		t.Errorf("the timer step: %d ledger rows, %s, %s; want one, completed", rows, state, result)
	}
	onceEach(t, "reminders", down, 1)
	t.Logf("the timer due at %s fired at %s, once, after every daemon was down", res.Due.Format(time.RFC3339Nano), res.FiredAt.Format(time.RFC3339Nano))
}
