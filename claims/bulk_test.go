package claims_test

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/operator"
	"github.com/agentledger/agentledger/registry"
)

// Count, List, IDs, Retry and Workers over one small world:
// two dead tasks, one succeeded, one running, two queued.
func TestBulkActions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClock()
	db := testdb.New(t)
	s, op := claims.New(db), operator.New(db)
	s.Now = c.Now
	op.PinClock(c.Now)
	reg := registry.New(db)
	reg.Now = c.Now
	var dead []int64
	for range 2 {
		enqueue(t, s, claims.EnqueueParams{Kind: "steps", MaxAttempts: 1})
		task := claimOne(t, s, "w1", time.Minute)
		if _, err := s.Fail(ctx, claims.Failure{Lease: claims.LeaseOf(task), Error: "boom", Final: true}); err != nil {
			t.Fatal(err)
		}
		dead = append(dead, task.ID)
	}
	enqueue(t, s, claims.EnqueueParams{Kind: "echo"})
	ok := claimOne(t, s, "w1", time.Minute)
	if err := s.Succeed(ctx, claims.LeaseOf(ok), nil); err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Hour)
	enqueue(t, s, claims.EnqueueParams{Kind: "sleep"})
	claimOne(t, s, "w2", time.Minute)
	enqueue(t, s, claims.EnqueueParams{Kind: "echo", Tenant: "acme"})
	enqueue(t, s, claims.EnqueueParams{Kind: "echo", Queue: "other", RunAt: c.Now().Add(time.Hour)})

	counts, err := s.Count(ctx, claims.ListParams{})
	if err != nil {
		t.Fatal(err)
	}
	if counts[agentledger.StateDead] != 2 || counts[agentledger.StateSucceeded] != 1 ||
		counts[agentledger.StateRunning] != 1 || counts[agentledger.StateQueued] != 2 {
		t.Fatalf("counts %v", counts)
	}
	// A time range (creation times are the database's own clock).
	now := time.Now()
	for _, tc := range []struct {
		p    claims.ListParams
		want int
	}{
		{claims.ListParams{Since: now.Add(-time.Hour)}, 6},
		{claims.ListParams{Since: now.Add(time.Hour)}, 0},
		{claims.ListParams{Until: now.Add(-time.Hour)}, 0},
		{claims.ListParams{Since: now.Add(-time.Hour), Until: now.Add(time.Hour), Queue: "other"}, 1},
	} {
		got, err := s.List(ctx, tc.p)
		if err != nil || len(got) != tc.want {
			t.Fatalf("%+v: %d tasks, %v; want %d", tc.p, len(got), err, tc.want)
		}
	}
	if _, err := s.List(ctx, claims.ListParams{Since: c.Now(), Until: c.Now()}); !errors.Is(err, agentledger.ErrInvalid) {
		t.Fatalf("empty range: %v", err)
	}

	workers, err := reg.Workers(ctx)
	if err != nil || len(workers) != 1 || workers[0].ID != "w2" || workers[0].Tasks != 1 {
		t.Fatalf("workers %+v %v", workers, err)
	}

	if _, err := op.Retry(ctx, "", ok.ID); !errors.Is(err, agentledger.ErrConflict) {
		t.Fatalf("retry of a succeeded task: %v", err)
	}
	if _, err := op.Retry(ctx, "acme", dead[0]); !errors.Is(err, agentledger.ErrNotFound) {
		t.Fatalf("retry of another tenant's task: %v", err)
	}
	got, err := op.Retry(ctx, "", dead[0])
	if err != nil || got.State != agentledger.StateQueued || got.Generation != 1 || got.Attempt != 0 {
		t.Fatalf("retry: %+v %v", got, err)
	}
	// The filter's ids page by page, newest first.
	all, err := s.IDs(ctx, claims.ListParams{}, 0, 100)
	if err != nil || len(all) != 6 || !slices.IsSortedFunc(all, func(a, b int64) int { return cmp.Compare(b, a) }) {
		t.Fatalf("ids %v %v, want the 6 tasks newest first", all, err)
	}
	page, err := s.IDs(ctx, claims.ListParams{Tenant: "default"}, all[1], 2)
	if err != nil || !slices.Equal(page, all[2:4]) {
		t.Fatalf("a page below %d: %v %v, want %v", all[1], page, err, all[2:4])
	}
	if _, err := s.IDs(ctx, claims.ListParams{Since: c.Now(), Until: c.Now()}, 0, 10); !errors.Is(err, agentledger.ErrInvalid) {
		t.Fatalf("ids of an empty range: %v", err)
	}
}

// A task that succeeds after failing shows no error: its failures stay in
// its attempt records.
func TestSuccessClearsTheLastError(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClock()
	s := pinnedStore(t, c)
	enqueue(t, s, claims.EnqueueParams{})
	task := claimOne(t, s, "w", time.Minute)
	if _, err := s.Fail(ctx, claims.Failure{Lease: claims.LeaseOf(task), Error: "boom"}); err != nil {
		t.Fatal(err)
	}
	task = claimOne(t, s, "w", time.Minute)
	if err := s.Succeed(ctx, claims.LeaseOf(task), nil); err != nil {
		t.Fatal(err)
	}
	if got := get(t, s, task.ID); got.LastError != "" {
		t.Fatalf("last error %q on a succeeded task", got.LastError)
	}
	attempts, err := s.Attempts(ctx, task.ID)
	if err != nil || len(attempts) != 2 || attempts[0].Error != "boom" {
		t.Fatalf("attempts %+v %v, want the failure kept", attempts, err)
	}
}
