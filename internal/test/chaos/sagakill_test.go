package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentledger/agentledger/agentledgertest/downstream"
	"github.com/agentledger/agentledger/claims"
)

// TestSagaRefundKilledBeforeRecord is issue 17's deterministic drill: the
// worker undoing a saga is SIGKILLed after the downstream performed the
// refund and before the ledger recorded it. A new daemon on the same
// database sends the refund again under the same Idempotency-Key, and the
// downstream still holds one refund, of the saga's own charge.
func TestSagaRefundKilledBeforeRecord(t *testing.T) {
	skipShort(t)
	w := newWorld(t)
	ctx := context.Background()
	down := downstream.New()
	t.Cleanup(down.Close)

	// The hook sees every recorded effect; the first refund it holds
	// until the daemon that asked for it is dead.
	var (
		mu       sync.Mutex
		requests []hookCall
	)
	refunded, release := make(chan struct{}), make(chan struct{})
	var releaseOnce sync.Once
	releaseHook := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(releaseHook) // before down.Close, which waits for the handler
	down.SetAfter(func(path, key string, _ []byte) {
		mu.Lock()
		requests = append(requests, hookCall{path, key})
		first := path == "/refunds" && len(requestsTo(requests, path)) == 1
		mu.Unlock()
		if first {
			close(refunded)
			<-release
		}
	})
	down.SetRefuse(func(path string, _ []byte) bool { return path == "/shipments" })

	u := down.URL
	payload := sprintf(`{"steps":[
		{"tool":"http_request","args":{"method":"POST","url":"%s/charges","body":{"charge":1,"amount":100}},
		 "compensate":{"tool":"http_request","args":{"method":"POST","url":"%s/refunds","body":{"refund":"${self.body.id}"}}}},
		{"tool":"http_request","args":{"method":"POST","url":"%s/shipments","body":{"ship":1,"address":"nowhere"}}}]}`, u, u, u)
	queued, err := claims.New(w.db).Enqueue(ctx, claims.EnqueueParams{Kind: "steps", Payload: json.RawMessage(payload),
		SubmissionKey: "saga:kill-drill", MaxAttempts: 5})
	must(t, err)
	task := queued.Task

	d := &daemon{name: "d1", bin: w.agentd, log: filepath.Join(w.dir, "d1.log"),
		args: []string{"--lease", lease.String(), "--heartbeat", "1s", "--grace", "500ms", "--poll-interval", "200ms",
			"--listen", "", "--http-allowed-hosts", u},
		env: []string{"DATABASE_URL=" + w.url, "AGENTLEDGER_STATE_DIR=" + filepath.Join(w.dir, "state-d1")},
	}
	must(t, d.start())
	defer stopAll(t, []*daemon{d})

	select {
	case <-refunded:
	case <-time.After(2 * time.Minute):
		t.Fatal("the downstream never received the refund")
	}
	d.kill()

	// The refund happened; its outcome is nowhere in the ledger. (A keyed
	// effect without a compensation of its own is not reserved before it
	// is performed: its row is absent, or pending were it reserved.)
	state, err := ledgerState(ctx, w, task.ID, "compensate/tool/0")
	must(t, err)
	if state != "" && state != "pending" {
		t.Fatalf("after the kill, the refund's ledger row is %s, want none or pending: its outcome cannot have been recorded", state)
	}
	if s, err := ledgerState(ctx, w, task.ID, "tool/0"); err != nil || s != "completed" {
		t.Fatalf("after the kill, the charge's ledger row is %q (%v), want completed", s, err)
	}
	t.Logf("after the SIGKILL the refund's ledger row is %s", orNone(state))

	releaseHook()
	must(t, d.start()) // a new process on the same database
	waitFor(t, "the saga compensated", 2*time.Minute, func() (bool, string) {
		var st, comp string
		if err := w.db.QueryRow(ctx, `SELECT state, coalesce(compensation, '') FROM tasks WHERE id = $1`, task.ID).Scan(&st, &comp); err != nil {
			return false, err.Error()
		}
		return st == "compensated", sprintf("task %d is %s (compensation %q)", task.ID, st, comp)
	})
	d.stop()

	state, err = ledgerState(ctx, w, task.ID, "compensate/tool/0")
	if err != nil || state != "completed" {
		t.Errorf("the refund's ledger row is %q (%v), want completed", state, err)
	}
	records := down.Records()
	if down.Effects() != 2 || len(records) != 2 || records[0].Path != "/charges" || records[1].Path != "/refunds" {
		t.Fatalf("downstream effects %d, keyed: %s; want one charge, then one refund", down.Effects(), describe(records))
	}
	charge, refund := records[0], records[1]
	if got := field(refund, "refund"); got != id(charge) {
		t.Errorf("the refund names %q, the charge is %s", got, id(charge))
	}
	mu.Lock()
	refunds := requestsTo(requests, "/refunds")
	mu.Unlock()
	if len(refunds) != 2 || refunds[0].key != refund.Key || refunds[1].key != refund.Key {
		t.Errorf("refund requests %+v; want two (the send and the re-send) under the refund's key %q", refunds, refund.Key)
	}
	if down.Refused() < 1 || !bytes.Contains(charge.Body, []byte(`"charge":1`)) {
		t.Errorf("the shipment was refused %d times; the charge is %s", down.Refused(), charge.Body)
	}
	t.Logf("downstream: %d hits, %d effects, %d refusals; refund key %s received %d times; daemon starts %d",
		down.Hits(), down.Effects(), down.Refused(), refund.Key, len(refunds), d.starts)
}

// hookCall is an effect's request, as the downstream's hook saw it.
type hookCall struct{ path, key string }

// requestsTo is the calls to path, in order.
func requestsTo(calls []hookCall, path string) []hookCall {
	var out []hookCall
	for _, c := range calls {
		if c.path == path {
			out = append(out, c)
		}
	}
	return out
}

// describe lists effects readably.
func describe(records []downstream.Record) string {
	var b strings.Builder
	for _, r := range records {
		b.WriteString(sprintf("\n  %d %s %s %s", r.N, r.Path, r.Key, r.Body))
	}
	return b.String()
}

// ledgerState is the state of task's ledger row at step path, "" if it has
// none.
func ledgerState(ctx context.Context, w *world, task int64, path string) (string, error) {
	var state string
	err := w.db.QueryRow(ctx, `SELECT state FROM ledger WHERE task_id = $1 AND step_path = $2`, task, path).Scan(&state)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return state, err
}

func orNone(state string) string {
	if state == "" {
		return "absent"
	}
	return state
}
