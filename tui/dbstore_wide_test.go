package tui

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testenv"
)

// The console opens a task whose id is past 32 bits, as every task's is
// after a failover or a restore (migration 00040): its approvals and waits
// are read by the task's id too.
func TestDBStoreOpensATaskWithAWideID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := testenv.New(t)
	r, err := e.Claims.Enqueue(ctx, claims.EnqueueParams{Kind: "echo", Payload: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if r.Task.ID <= 1<<31 {
		t.Fatalf("task id %d fits 32 bits: the test database's ids were not advanced", r.Task.ID)
	}
	d, err := NewDBStore(e.DB).Get(ctx, r.Task.ID)
	if err != nil {
		t.Fatalf("opening task %d: %v", r.Task.ID, err)
	}
	if d.Task.ID != r.Task.ID || len(d.Approvals) != 0 || len(d.Waits) != 0 {
		t.Errorf("task %d: %+v", r.Task.ID, d)
	}
}
