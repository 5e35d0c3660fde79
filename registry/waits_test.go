package registry_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/registry"
)

// A due task a live pool can run, whose tenant runs as many tasks as its
// share allows, says it waits for one of them to end; a task of a tenant
// under its cap, or of one with no cap, says nothing.
func TestExplainWaitsSaysATenantIsAtItsCap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	s := registry.New(db)
	if err := s.Register(ctx, registry.Registration{ID: "w1", Host: "h", PID: 1, Queues: []string{"default"}, Kinds: []string{"noop"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `INSERT INTO tenant_shares (tenant, weight, max_running, source) VALUES ('acme', 1, 1, 'operator'), ('wide', 1, 5, 'operator')`); err != nil {
		t.Fatal(err)
	}
	c := claims.New(db)
	for _, tenant := range []string{"acme", "wide"} {
		if _, err := c.Enqueue(ctx, claims.EnqueueParams{Tenant: tenant, Kind: "noop"}); err != nil {
			t.Fatal(err)
		}
		if got, err := c.Claim(ctx, claims.ClaimParams{Queue: claims.DefaultQueue, Worker: "w1", Limit: 1, Lease: time.Minute}); err != nil || len(got) != 1 {
			t.Fatalf("claim of %s's task: %v, %v", tenant, got, err)
		}
	}
	var waiting []string
	for _, tenant := range []string{"acme", "wide", "free"} {
		r, err := c.Enqueue(ctx, claims.EnqueueParams{Tenant: tenant, Kind: "noop"})
		if err != nil {
			t.Fatal(err)
		}
		task := r.Task
		if err := s.ExplainWaits(ctx, task); err != nil {
			t.Fatal(err)
		}
		waiting = append(waiting, task.WaitReason)
	}
	want := []string{"tenant acme runs 1 of the 1 tasks its share allows at once: the next starts when one ends", "", ""}
	for i := range want {
		if waiting[i] != want[i] {
			t.Errorf("task of tenant %d: wait reason %q, want %q", i, waiting[i], want[i])
		}
	}
}
