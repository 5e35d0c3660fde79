package chaos

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentledger/agentledger/agentledgertest/downstream"
	"github.com/agentledger/agentledger/approvals"
	"github.com/agentledger/agentledger/claims"
)

// TestApprovalKilledBetweenDecisionAndEffect is issue 35's drill: a charge
// gated on approval is approved, and the daemon performing it is
// SIGKILLed after the downstream performed the charge and before the
// ledger recorded it. The decision is not lost — nobody is asked again —
// and a new daemon sends the charge again under its key: the downstream
// holds one charge.
func TestApprovalKilledBetweenDecisionAndEffect(t *testing.T) {
	skipShort(t)
	w := newWorld(t)
	ctx := context.Background()
	down := downstream.New()
	t.Cleanup(down.Close)
	charged, release := make(chan struct{}), make(chan struct{})
	var once, first sync.Once
	releaseHook := func() { once.Do(func() { close(release) }) }
	t.Cleanup(releaseHook) // before down.Close, which waits for the handler
	down.SetAfter(func(path, _ string, _ []byte) {
		first.Do(func() {
			close(charged)
			<-release
		})
	})

	payload := sprintf(`{"steps":[{"tool":"http_request","args":{"method":"POST","url":"%s/charges","body":{"charge":1,"amount":100}},
		"approve":{"approvers":["U1"],"timeout":"1h"}}]}`, down.URL)
	queued, err := claims.New(w.db).Enqueue(ctx, claims.EnqueueParams{Kind: "steps", Payload: json.RawMessage(payload), MaxAttempts: 5})
	must(t, err)
	task := queued.Task
	d := &daemon{name: "d1", bin: w.agentd, log: filepath.Join(w.dir, "d1.log"),
		args: []string{"--lease", lease.String(), "--heartbeat", "1s", "--grace", "500ms", "--poll-interval", "200ms",
			"--listen", "", "--http-allowed-hosts", down.URL},
		env: []string{"DATABASE_URL=" + w.url, "AGENTLEDGER_STATE_DIR=" + filepath.Join(w.dir, "state-d1")},
	}
	must(t, d.start())
	defer stopAll(t, []*daemon{d})

	gates := approvals.NewStore(w.db)
	var req approvals.Request
	waitFor(t, "the task asked for approval", time.Minute, func() (bool, string) {
		rs, err := gates.List(ctx, approvals.ListParams{TaskID: task.ID})
		if err != nil || len(rs) != 1 {
			return false, sprintf("%d requests (%v)", len(rs), err)
		}
		req = rs[0]
		return true, ""
	})
	if down.Hits() != 0 {
		t.Fatalf("%d calls before the decision", down.Hits())
	}
	_, won, err := gates.Decide(ctx, approvals.Decision{ID: req.ID, Approve: true, By: "U1", Via: "slack", Reason: "go"})
	if err != nil || !won {
		t.Fatal(won, err)
	}
	select {
	case <-charged:
	case <-time.After(time.Minute):
		t.Fatal("the approved charge never reached the downstream")
	}
	d.kill()
	if s, err := ledgerState(ctx, w, task.ID, "tool/0"); err != nil || (s != "" && s != "pending") {
		t.Fatalf("after the kill, the charge's ledger row is %q (%v): its outcome cannot have been recorded", s, err)
	}

	releaseHook()
	must(t, d.start())
	waitFor(t, "the task succeeded", 2*time.Minute, func() (bool, string) {
		var st string
		if err := w.db.QueryRow(ctx, `SELECT state FROM tasks WHERE id = $1`, task.ID).Scan(&st); err != nil {
			return false, err.Error()
		}
		return st == "succeeded", "task " + st
	})
	d.stop()
	all, err := gates.List(ctx, approvals.ListParams{TaskID: task.ID, States: []string{approvals.Pending, approvals.Approved, approvals.Denied}})
	if err != nil || len(all) != 1 || all[0].State != approvals.Approved || all[0].DecidedBy != "U1" {
		t.Fatalf("requests after the restart %+v (%v): want the one decision, kept", all, err)
	}
	if down.Effects() != 1 || down.Hits() < 2 {
		t.Fatalf("downstream: %d effects from %d requests; want one charge, sent twice", down.Effects(), down.Hits())
	}
	t.Logf("one charge from %d requests; the decision by %s kept across the SIGKILL", down.Hits(), all[0].DecidedBy)
}
