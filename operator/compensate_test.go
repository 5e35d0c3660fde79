package operator_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/testenv"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/operator"
	"github.com/agentledger/agentledger/tools"
)

// sagaPayload: steps 0 and 1 declare compensations, step 2 does not.
const sagaPayload = `{"steps": [
	{"tool": "http_request", "args": {"url": "https://a.example/charges"}, "compensate": {"tool": "http_request", "args": {"url": "https://a.example/refunds"}}},
	{"tool": "http_request", "args": {"url": "https://b.example/rooms"}, "compensate": {"tool": "notify", "args": {"text": "${self.body.id}"}}},
	{"tool": "notify", "args": {"text": "done"}}]}`

// doEffect performs a keyed effect of the running task at step.
func doEffect(t *testing.T, e *testenv.Env, running *agentledger.Task, step string, undoBy string, body string) {
	t.Helper()
	if _, err := e.Ledger.Do(context.Background(), tools.AttemptOf(running), ledger.Effect{Operation: "http.post", StepPath: step,
		Class: ledger.Keyed, Request: []byte(`{}`), Compensate: compensation(undoBy),
		Perform: func(context.Context, ledger.Call) (ledger.Result, error) {
			return ledger.Result{Status: 200, Body: json.RawMessage(body)}, nil
		},
	}); err != nil {
		t.Fatal(err)
	}
}

// The plan lists the completed effects whose steps declared a compensation,
// newest first, with the tool that undoes each; Compensate starts the
// phase, after which the plan is refused like a second Compensate.
func TestPlanCompensation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := testenv.New(t)
	svc := operator.New(e.DB)
	task := e.Enqueue(claims.EnqueueParams{Tenant: "acme", Payload: json.RawMessage(sagaPayload)})
	running := e.Claim("w")
	if _, err := svc.PlanCompensation(ctx, "", task.ID); !errors.Is(err, agentledger.ErrConflict) {
		t.Fatalf("plan of a running task: %v, want a conflict", err)
	}
	doEffect(t, e, running, "tool/0", "http_request", `{"id":"ch_1"}`)
	doEffect(t, e, running, "tool/1", "notify", `{"id":"rm_2"}`)
	doEffect(t, e, running, "tool/2", "", `{}`)
	if err := e.Claims.Succeed(ctx, claims.LeaseOf(running), nil); err != nil {
		t.Fatal(err)
	}

	p, err := svc.PlanCompensation(ctx, "acme", task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Undos) != 2 || p.Undos[0].Step != "tool/1" || p.Undos[0].Tool != "notify" ||
		p.Undos[1].Step != "tool/0" || p.Undos[1].Tool != "http_request" || !strings.Contains(string(p.Undos[1].Result), "ch_1") {
		t.Fatalf("plan: %+v", p.Undos)
	}
	if _, err := svc.PlanCompensation(ctx, "other", task.ID); !errors.Is(err, agentledger.ErrNotFound) {
		t.Fatalf("another tenant's plan: %v, want not found", err)
	}

	got, err := svc.Compensate(ctx, "acme", task.ID)
	if err != nil || got.State != agentledger.StateCompensating || got.Compensation != "operator" {
		t.Fatalf("compensate: %+v %v", got, err)
	}
	if _, err := svc.PlanCompensation(ctx, "", task.ID); !errors.Is(err, agentledger.ErrConflict) {
		t.Fatalf("plan of a compensating task: %v, want a conflict", err)
	}
	if _, err := svc.Compensate(ctx, "", task.ID); !errors.Is(err, agentledger.ErrConflict) {
		t.Fatalf("second compensate: %v, want a conflict", err)
	}
}

// A task whose steps declared no compensation has an empty plan, and
// Compensate refuses it.
func TestPlanCompensationNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := testenv.New(t)
	svc := operator.New(e.DB)
	task := e.Enqueue(claims.EnqueueParams{Payload: json.RawMessage(`{"steps": [{"tool": "http_request", "args": {}}]}`)})
	running := e.Claim("w")
	doEffect(t, e, running, "tool/0", "", `{}`)
	if err := e.Claims.Succeed(ctx, claims.LeaseOf(running), nil); err != nil {
		t.Fatal(err)
	}
	if p, err := svc.PlanCompensation(ctx, "", task.ID); err != nil || len(p.Undos) != 0 {
		t.Fatalf("plan: %+v %v", p, err)
	}
	if _, err := svc.Compensate(ctx, "", task.ID); !errors.Is(err, agentledger.ErrConflict) {
		t.Fatalf("compensate: %v, want a conflict", err)
	}
}

// compensation is the compensation an effect declares: a call of tool, or
// none when tool is empty.
func compensation(tool string) json.RawMessage {
	if tool == "" {
		return nil
	}
	return json.RawMessage(`{"tool":"` + tool + `","args":{}}`)
}
