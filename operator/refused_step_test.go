package operator_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/approvals"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testenv"
	"github.com/agentledger/agentledger/operator"
)

// A steps task whose call a person denied, or whose request a cancel
// withdrew, is neither retried nor replayed: the decision stands for its
// generation, and the task would fail at that step again, asking nobody.
// The refusal changes nothing. A Go kind, which decides what a refused
// call means, is retried and replayed.
func TestRetryAndReplayRefuseAStepsTaskWhoseCallWasRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := testenv.New(t)
	svc := operator.New(e.DB)
	ask := func(task *agentledger.Task) approvals.Request {
		t.Helper()
		r, _, err := approvals.NewStore(e.DB).Ensure(ctx, approvals.Request{TaskID: task.ID, Generation: task.Generation,
			Step: "tool/0", Tenant: "acme", Tool: "http_request", Class: "keyed",
			Call: json.RawMessage(`{"method":"POST","url":"https://pay.example/refunds"}`), OnTimeout: "deny"}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, kind := range []string{"steps", "order"} {
		// Denied, then dead: a retry.
		denied := e.Enqueue(claims.EnqueueParams{Tenant: "acme", Kind: kind, Payload: []byte(`{"steps":[{"tool":"http_request","args":{}}]}`)})
		running := e.Claim("w")
		r := ask(denied)
		if _, err := svc.Decide(ctx, approvals.Decision{ID: r.ID, By: "alice", Via: operator.ViaAgentctl, Reason: "not this one"}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Claims.Fail(ctx, claims.Failure{Lease: claims.LeaseOf(running), Error: "approval request denied", Final: true}); err != nil {
			t.Fatal(err)
		}
		_, err := svc.Retry(ctx, "", denied.ID)
		checkRefused(t, kind, "retry", err, fmt.Sprintf("approval request %d denied by alice", r.ID))
		checkState(t, svc, denied.ID, kind, agentledger.StateDead)

		// Waiting for a decision, then cancelled: a replay, and its preview.
		withdrawn := e.Enqueue(claims.EnqueueParams{Tenant: "acme", Kind: kind, Payload: []byte(`{"steps":[{"tool":"http_request","args":{}}]}`)})
		r = ask(withdrawn)
		if _, err := svc.CancelBy(ctx, "", withdrawn.ID, "operator:bob"); err != nil {
			t.Fatal(err)
		}
		if got, _ := svc.Approval(ctx, "", r.ID); got.State != approvals.Withdrawn {
			t.Fatalf("the cancel left request %d %s, want withdrawn", r.ID, got.State)
		}
		how := fmt.Sprintf("approval request %d withdrawn when operator:bob cancelled the task", r.ID)
		_, err = svc.Preview(ctx, "", withdrawn.ID)
		checkRefused(t, kind, "replay", err, how)
		_, err = svc.Replay(ctx, "", withdrawn.ID)
		checkRefused(t, kind, "replay", err, how)
		checkState(t, svc, withdrawn.ID, kind, agentledger.StateCancelled)
	}
}

// checkRefused checks err, the outcome of action on a task of kind: a
// RefusedStepError naming how for a steps task, none for another kind.
func checkRefused(t *testing.T, kind, action string, err error, how string) {
	t.Helper()
	var refused *operator.RefusedStepError
	switch {
	case kind != "steps":
		if err != nil {
			t.Errorf("%s of a %s task: %v, want it done", action, kind, err)
		}
	case !errors.As(err, &refused) || !errors.Is(err, agentledger.ErrConflict):
		t.Errorf("%s of a steps task whose call was refused: %v, want a RefusedStepError", action, err)
	case !strings.Contains(err.Error(), "call at tool/0 was not approved ("+how+"): a "+action+" would meet the same refusal"):
		t.Errorf("%s refused with %q, want it to name the call and how it was refused (%s)", action, err, how)
	}
}

// checkState checks that a refused steps task stayed as it was; another
// kind's was queued.
func checkState(t *testing.T, svc *operator.Service, id int64, kind string, was agentledger.TaskState) {
	t.Helper()
	want := was
	if kind != "steps" {
		want = agentledger.StateQueued
	}
	if d, err := svc.Show(context.Background(), "", id); err != nil || d.Task.State != want {
		t.Errorf("%s task %d is %s (%v), want %s", kind, id, d.Task.State, err, want)
	}
}

// A retry is refused a task that is not dead as not dead, whatever its
// refused calls: the refusal says what the task is.
func TestRetryOfACancelledTaskSaysItIsNotDead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, task := cancelledWhileAsking(t)
	var refused *operator.RefusedStepError
	if _, err := svc.Retry(ctx, "", task.ID); !errors.Is(err, agentledger.ErrConflict) || errors.As(err, &refused) {
		t.Fatalf("retry of a cancelled task: %v, want the conflict that it is not dead", err)
	}
}

// A tenant refused a replay is told the way to ask anew that it has: a
// re-run is the operator's, so it submits the work again; the operator is
// told of agentctl rerun.
func TestARefusedReplaySaysHowItsCallerAsksAnew(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, task := cancelledWhileAsking(t)
	for tenant, want := range map[string]string{
		"acme": "to ask anew, submit the work again as a new task, under a new Idempotency-Key",
		"":     fmt.Sprintf("to ask anew, re-run the task as a new intent (agentctl rerun %d --yes", task.ID),
	} {
		_, err := svc.Replay(ctx, tenant, task.ID)
		if !errors.Is(err, agentledger.ErrConflict) || !strings.Contains(err.Error(), want) ||
			tenant != "" && strings.Contains(err.Error(), "agentctl") {
			t.Errorf("replay as %q: %v, want a conflict saying %q", tenant, err, want)
		}
	}
}

// cancelledWhileAsking is acme's steps task cancelled by the operator
// while its call at tool/0 waited for approval: the request is withdrawn.
func cancelledWhileAsking(t *testing.T) (*operator.Service, *agentledger.Task) {
	t.Helper()
	ctx := context.Background()
	e := testenv.New(t)
	svc := operator.New(e.DB)
	task := e.Enqueue(claims.EnqueueParams{Tenant: "acme", Kind: "steps", Payload: []byte(`{"steps":[{"tool":"http_request","args":{}}]}`)})
	if _, _, err := approvals.NewStore(e.DB).Ensure(ctx, approvals.Request{TaskID: task.ID, Generation: task.Generation,
		Step: "tool/0", Tenant: "acme", Tool: "http_request", Class: "keyed", Call: json.RawMessage(`{}`), OnTimeout: "deny"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CancelBy(ctx, "", task.ID, "operator:bob"); err != nil {
		t.Fatal(err)
	}
	return svc, task
}
