package operator_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/approvals"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testenv"
	"github.com/agentledger/agentledger/operator"
)

// The operator lists, reads and decides approval requests: a denial needs
// its reason, the first decision wins, and a later one is a conflict that
// holds the request as the winner left it and changes nothing.
func TestDecideApproval(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := testenv.New(t)
	svc := operator.New(e.DB)
	task := e.Enqueue(claims.EnqueueParams{Tenant: "acme", Kind: "steps"})
	req, _, err := approvals.NewStore(e.DB).Ensure(ctx, approvals.Request{TaskID: task.ID, Generation: task.Generation,
		Step: "tool/0", Tenant: "acme", Tool: "http_request", Class: "keyed",
		Call: json.RawMessage(`{"method":"POST","url":"https://pay.example/refunds"}`), Approvers: []string{"U1"}, OnTimeout: "deny"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}

	pending, err := svc.Approvals(ctx, approvals.ListParams{Tenant: "acme"})
	if err != nil || len(pending) != 1 || pending[0].ID != req.ID {
		t.Fatalf("pending: %+v %v", pending, err)
	}
	if _, err := svc.Approvals(ctx, approvals.ListParams{States: []string{"maybe"}}); !errors.Is(err, agentledger.ErrInvalid) {
		t.Fatalf("an unknown state: %v, want invalid", err)
	}
	if _, err := svc.Approval(ctx, "other", req.ID); !errors.Is(err, agentledger.ErrNotFound) {
		t.Fatalf("another tenant's request: %v, want not found", err)
	}

	if _, err := svc.Decide(ctx, approvals.Decision{ID: req.ID, By: "alice", Via: operator.ViaAgentctl, Reason: "  "}); !errors.Is(err, agentledger.ErrInvalid) {
		t.Fatalf("a denial without a reason: %v, want invalid", err)
	}
	if _, err := svc.Decide(ctx, approvals.Decision{ID: req.ID + 1000, Approve: true, By: "alice", Via: operator.ViaAgentctl}); !errors.Is(err, agentledger.ErrNotFound) {
		t.Fatalf("an unknown request: %v, want not found", err)
	}
	if got, err := svc.Approval(ctx, "", req.ID); err != nil || got.State != approvals.Pending {
		t.Fatalf("after refused decisions: %+v %v, want still pending", got, err)
	}

	won, err := svc.Decide(ctx, approvals.Decision{ID: req.ID, Approve: true, By: "alice", Via: operator.ViaAgentctl, Reason: "checked"})
	if err != nil || won.State != approvals.Approved || won.DecidedBy != "alice" || won.DecidedVia != "agentctl" {
		t.Fatalf("approve: %+v %v", won, err)
	}
	late, err := svc.Decide(ctx, approvals.Decision{ID: req.ID, By: "bob", Via: operator.ViaConsole, Reason: "too much"})
	var decided *operator.DecidedError
	if !errors.Is(err, agentledger.ErrConflict) || !errors.As(err, &decided) || late.State != approvals.Approved ||
		decided.Request.DecidedBy != "alice" {
		t.Fatalf("a late denial: %+v %v, want a conflict holding alice's approval", late, err)
	}
	if msg := err.Error(); !strings.Contains(msg, "was decided already: approved by alice via agentctl at ") || !strings.HasSuffix(msg, ": checked") {
		t.Errorf("late decision's message: %q", msg)
	}
	done, err := svc.Approvals(ctx, approvals.ListParams{States: []string{approvals.Approved}})
	if err != nil || len(done) != 1 || done[0].DecisionReason != "checked" {
		t.Fatalf("approved: %+v %v", done, err)
	}
	if operator.Decider() == "" {
		t.Error("no decider")
	}
}

// RefusedHow names who cancelled the task whose request a cancel withdrew:
// a replay's warning said "withdrawn" alone.
func TestRefusedHow(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		r    approvals.Request
		want string
	}{
		{approvals.Request{State: approvals.Denied, DecidedBy: "alice"}, "denied by alice"},
		{approvals.Request{State: approvals.Expired, DecidedBy: "timeout", DecidedVia: "timeout"}, "timed out"},
		{approvals.Request{State: approvals.Withdrawn, DecidedBy: "operator:root", DecidedVia: "cancel"},
			"withdrawn when operator:root cancelled the task"},
		{approvals.Request{State: approvals.Withdrawn}, "withdrawn"},
	} {
		if got := operator.RefusedHow(c.r); got != c.want {
			t.Errorf("RefusedHow(%s by %q via %q) = %q, want %q", c.r.State, c.r.DecidedBy, c.r.DecidedVia, got, c.want)
		}
	}
}
