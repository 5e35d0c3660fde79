package metrics_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/metrics"
	"github.com/agentledger/agentledger/notify/outbox"
	"github.com/agentledger/agentledger/worker"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// The observers count, and the database gauges read the tables.
func TestMetrics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	m := metrics.New()
	m.WatchDatabase(db)
	r, err := claims.New(db).Enqueue(ctx, claims.EnqueueParams{Kind: "noop"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := outbox.AddMessage(ctx, db, outbox.Message{Tenant: "default", TaskID: r.Task.ID, Generation: 1,
		StepPath: "tool/0", Channel: "ops", Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	w := m.Worker()
	w.Claimed("default", 3)
	w.(worker.StartObserver).StartedAtEnqueue("default")
	w.LeaseLost()
	w.(worker.DeferObserver).Deferred("steps", "http")
	w.Finished("steps", agentledger.StateSucceeded, time.Millisecond)
	m.Effect("http_request", ledger.Keyed, "served")
	m.Effect("http_request", ledger.Keyed, "served")
	m.HTTP("POST /v1/tasks", 201, time.Millisecond)

	want := `
# HELP agentledger_effects_total Effects through the ledger by operation, class and outcome: performed, served (from the ledger, not performed again), failed, unknown, deferred (waits for a limit), lease_lost, error.
# TYPE agentledger_effects_total counter
agentledger_effects_total{class="keyed",operation="http_request",outcome="served"} 2
# HELP agentledger_deferrals_total Attempts deferred to wait for a fleet-wide limit (not counted as attempts), by the kind of target waited for.
# TYPE agentledger_deferrals_total counter
agentledger_deferrals_total{target_kind="http"} 1
# HELP agentledger_ledger_unknown_effects Effects of unknown outcome waiting for an operator.
# TYPE agentledger_ledger_unknown_effects gauge
agentledger_ledger_unknown_effects 0
# HELP agentledger_outbox_pending Outbox events not yet delivered.
# TYPE agentledger_outbox_pending gauge
agentledger_outbox_pending 1
# HELP agentledger_tasks Tasks by state (all tenants).
# TYPE agentledger_tasks gauge
agentledger_tasks{state="queued"} 1
# HELP agentledger_tasks_claimed_total Tasks claimed by this daemon, by queue (with those it started at their enqueue).
# TYPE agentledger_tasks_claimed_total counter
agentledger_tasks_claimed_total{queue="default"} 3
# HELP agentledger_tasks_started_at_enqueue_total Of the tasks claimed, those this daemon's idle pool took at their enqueue, without a claim, by queue.
# TYPE agentledger_tasks_started_at_enqueue_total counter
agentledger_tasks_started_at_enqueue_total{queue="default"} 1
`
	if err := testutil.GatherAndCompare(m.Registry, strings.NewReader(want),
		"agentledger_effects_total", "agentledger_deferrals_total", "agentledger_ledger_unknown_effects", "agentledger_outbox_pending",
		"agentledger_tasks", "agentledger_tasks_claimed_total", "agentledger_tasks_started_at_enqueue_total"); err != nil {
		t.Fatal(err)
	}
	if n, err := testutil.GatherAndCount(m.Registry, "agentledger_outbox_lag_seconds", "agentledger_database_up",
		"agentledger_http_requests_total", "agentledger_lease_losses_total", "agentledger_attempts_total"); err != nil || n != 5 {
		t.Fatalf("%d series, %v", n, err)
	}
}
