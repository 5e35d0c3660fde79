package operator_test

import (
	"context"
	"testing"

	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testenv"
	"github.com/agentledger/agentledger/operator"
)

// A task sent forward again waits for nothing it waited for before: a
// replay of a task cancelled while it waited drops the wait's reason,
// which the API's answer and agentctl show would show for the run to come.
func TestReplayDropsTheWaitReasonBefore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := testenv.New(t)
	svc := operator.New(e.DB)
	task := e.Enqueue(claims.EnqueueParams{Tenant: "acme", Kind: "order"})
	if _, err := e.DB.Exec(ctx, `UPDATE tasks SET state = 'waiting', wait_reason = 'waiting for signal order.paid key 7 (wait 10)' WHERE id = $1`, task.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CancelBy(ctx, "", task.ID, "operator:bob"); err != nil {
		t.Fatal(err)
	}
	p, err := svc.Replay(ctx, "", task.ID)
	if err != nil {
		t.Fatal(err)
	}
	var reason *string
	if err := e.DB.QueryRow(ctx, `SELECT wait_reason FROM tasks WHERE id = $1`, task.ID).Scan(&reason); err != nil {
		t.Fatal(err)
	}
	if p.Task.WaitReason != "" || reason != nil {
		t.Fatalf("replayed, the task still says %q (row: %v): the wait it names is over", p.Task.WaitReason, reason)
	}
}
