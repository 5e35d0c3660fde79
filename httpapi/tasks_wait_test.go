package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/httpapi"
)

// A task deferred to wait for a limit says why in wait_reason.
func TestTaskShowsWhatItWaitsFor(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpapi.Config{})
	tok := e.tenant("acme")
	ctx := context.Background()
	created := e.task(e.post("/v1/tasks", tok, "w1", `{"kind":"report"}`), http.StatusCreated)
	got, err := e.claims.Claim(ctx, claims.ClaimParams{Queue: "default", Worker: "w1", Limit: 1, Lease: time.Hour})
	if err != nil || len(got) != 1 {
		t.Fatalf("claim: %v %v", got, err)
	}
	const reason = "http:https://billing.internal:8080: rate limit, next slot in 2.1s"
	if err := e.claims.Defer(ctx, claims.Deferral{Lease: claims.LeaseOf(got[0]), Until: time.Now().Add(time.Hour), Reason: reason}); err != nil {
		t.Fatal(err)
	}
	task := e.task(e.do(http.MethodGet, fmt.Sprintf("/v1/tasks/%d", created.ID), tok, ""), http.StatusOK)
	if task.State != "queued" || task.WaitReason == nil || *task.WaitReason != reason || task.Attempt != 0 {
		t.Fatalf("deferred task: state %s attempt %d wait %v", task.State, task.Attempt, task.WaitReason)
	}
}
