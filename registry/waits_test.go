package registry_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/registry"
)

// liveNoopPool is a fresh database where a live pool w1 runs noop tasks of
// the default queue, and its registry.
func liveNoopPool(t *testing.T) (*pgxpool.Pool, *registry.Store) {
	t.Helper()
	db := testdb.New(t)
	s := registry.New(db)
	if err := s.Register(context.Background(), registry.Registration{ID: "w1", Host: "h", PID: 1,
		Queues: []string{"default"}, Kinds: []string{"noop"}}); err != nil {
		t.Fatal(err)
	}
	return db, s
}

// A due task a live pool can run, whose tenant runs as many tasks as its
// share allows, says it waits for one of them to end; a task of a tenant
// under its cap, or of one with no cap, says nothing.
func TestExplainWaitsSaysATenantIsAtItsCap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, s := liveNoopPool(t)
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

// A cap's explanation counts as the claims do: a running task marked
// uncapped (leased by a claim made while the cap's transaction was open)
// does not count towards the cap, so a due task of its tenant is not said
// to wait for it; one marked capped, or unknown, does. A tenant over its
// cap (lowered while its tasks ran) is said to wait for as many to end as
// it runs above the cap, and one more.
func TestExplainWaitsCountsAsTheClaims(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, s := liveNoopPool(t)
	if _, err := db.Exec(ctx, `INSERT INTO tenant_shares (tenant, weight, max_running, source)
		VALUES ('gap', 1, 1, 'operator'), ('old', 1, 1, 'operator'), ('over', 1, 2, 'operator')`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `INSERT INTO tasks (tenant, kind, state, attempt, lease_owner, lease_token, lease_expires_at, attempted_at, capped)
		VALUES ('gap', 'noop', 'running', 1, 'w1', 1, now() + interval '1 hour', now(), false),
		       ('old', 'noop', 'running', 1, 'w1', 2, now() + interval '1 hour', now(), NULL)`); err != nil {
		t.Fatal(err)
	}
	// over runs 5 under a cap of 2, lowered while they ran.
	if _, err := db.Exec(ctx, `INSERT INTO tasks (tenant, kind, state, attempt, lease_owner, lease_token, lease_expires_at, attempted_at, capped)
		SELECT 'over', 'noop', 'running', 1, 'w1', 10 + g, now() + interval '1 hour', now(), true FROM generate_series(1, 5) g`); err != nil {
		t.Fatal(err)
	}
	c := claims.New(db)
	for tenant, want := range map[string]string{
		"gap":  "",
		"old":  "tenant old runs 1 of the 1 tasks its share allows at once: the next starts when one ends",
		"over": "tenant over runs 5 tasks, over the 2 its share allows at once: the next starts when 4 have ended",
	} {
		r, err := c.Enqueue(ctx, claims.EnqueueParams{Tenant: tenant, Kind: "noop"})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.ExplainWaits(ctx, r.Task); err != nil {
			t.Fatal(err)
		}
		if r.Task.WaitReason != want {
			t.Errorf("task of %s: wait reason %q, want %q", tenant, r.Task.WaitReason, want)
		}
	}
}
