package operator_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testenv"
	"github.com/agentledger/agentledger/operator"
)

// RetryAll and CancelAll over one small world: two dead tasks, one
// succeeded, one running, a queued one of another tenant and a late one.
func TestBulkActions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := testenv.New(t)
	svc := operator.New(e.DB)
	svc.PinClock(e.Now)
	var dead []int64
	for range 2 {
		e.Enqueue(claims.EnqueueParams{Kind: "steps", MaxAttempts: 1})
		task := e.Claim("w1")
		if _, err := e.Claims.Fail(ctx, claims.Failure{Lease: claims.LeaseOf(task), Error: "boom", Final: true}); err != nil {
			t.Fatal(err)
		}
		dead = append(dead, task.ID)
	}
	e.Enqueue(claims.EnqueueParams{Kind: "echo"})
	ok := e.Claim("w1")
	e.Succeed(ok)
	e.Enqueue(claims.EnqueueParams{Kind: "sleep"})
	running := e.Claim("w2")
	acme := e.Enqueue(claims.EnqueueParams{Kind: "echo", Tenant: "acme"})
	e.Enqueue(claims.EnqueueParams{Kind: "echo", Queue: "other", RunAt: e.Now().Add(time.Hour)})

	// A filter on other states still retries only dead tasks.
	res, err := svc.RetryAll(ctx, claims.ListParams{States: []agentledger.TaskState{agentledger.StateSucceeded}})
	if err != nil || !slices.Equal(res.Done, []int64{dead[1], dead[0]}) || len(res.Skipped) != 0 {
		t.Fatalf("retry all: %+v %v; want both dead tasks, newest first", res, err)
	}
	if _, err := e.Operator.Cancel(ctx, "", dead[0]); err != nil {
		t.Fatal(err)
	}

	res, err = svc.CancelAll(ctx, claims.ListParams{Tenant: "default",
		States: []agentledger.TaskState{agentledger.StateQueued, agentledger.StateCancelled, agentledger.StateRunning}})
	if err != nil {
		t.Fatal(err)
	}
	// The retried task still queued and the late one are done, the
	// running one flagged (it stops at its next heartbeat); the one
	// cancelled meanwhile is skipped with why; acme's task and the
	// succeeded one are not touched.
	if len(res.Done) != 2 || !slices.Equal(res.Flagged, []int64{running.ID}) || slices.Contains(res.Done, dead[0]) ||
		res.Skipped[dead[0]] == "" || len(res.Skipped) != 1 {
		t.Fatalf("cancel all: %+v", res)
	}
	if got, err := e.Claims.Get(ctx, "", running.ID); err != nil || got.CancelRequested == nil || got.State != agentledger.StateRunning {
		t.Fatalf("running task after cancel all: %+v %v", got, err)
	}
	if got, err := e.Claims.Get(ctx, "", acme.ID); err != nil || got.State != agentledger.StateQueued {
		t.Fatalf("acme's task after cancel all: %+v %v", got, err)
	}
	if got, err := e.Claims.Get(ctx, "", ok.ID); err != nil || got.State != agentledger.StateSucceeded {
		t.Fatalf("the succeeded task after cancel all: %+v %v", got, err)
	}
}

// A bulk action over more than a page says how far it is after each page.
func TestBulkActionsSayHowFar(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := testenv.New(t)
	ps := make([]claims.EnqueueParams, 1500)
	for i := range ps {
		ps[i] = claims.EnqueueParams{Kind: "echo", Tenant: "acme"}
	}
	if _, err := e.Claims.EnqueueBatch(ctx, ps); err != nil {
		t.Fatal(err)
	}
	svc := operator.New(e.DB)
	var told []int
	svc.BulkProgress = func(n int) { told = append(told, n) }
	res, err := svc.CancelAll(ctx, claims.ListParams{Tenant: "acme"})
	if err != nil || len(res.Done) != 1500 || !slices.Equal(told, []int{1000}) {
		t.Fatalf("cancelled %d (%v), told %v: want 1500, told once at 1000", len(res.Done), err, told)
	}
}
