package steps_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/steps"
	"github.com/agentledger/agentledger/tools"
)

// unsure is an unsafe tool whose calls lose their answers: each leaves its
// effect's outcome unknown.
type unsure struct{}

func (unsure) Name() string                { return "unsure" }
func (unsure) Description() string         { return "a call whose answer is lost" }
func (unsure) Parameters() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (unsure) Effect(c tools.Call) (ledger.Effect, error) {
	return ledger.Effect{Operation: "test.unsure", Class: ledger.Unsafe, Request: c.Args,
		Perform: func(context.Context, ledger.Call) (ledger.Result, error) {
			return ledger.Result{}, errors.New("connection reset after the request was sent")
		}}, nil
}

// A step whose effect an operator resolved as done is marked so in the
// task's result once the task runs again: the operator's word is not a
// downstream's answer.
func TestAResolvedStepIsMarkedInTheResult(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	runner := steps.New(e.Ledger, tools.NewRegistry(unsure{}))
	id := e.submit(`{"steps":[{"tool":"unsure","args":{"order":7}}]}`)
	first := e.claim()
	if _, err := runner.Work(ctx, first); err == nil {
		t.Fatal("the lost answer: want an error")
	}
	if err := e.Claims.NeedsAttention(ctx, claims.LeaseOf(first), "unknown outcome"); err != nil {
		t.Fatal(err)
	}
	key := ledger.EffectKey(first.Tenant, id, first.Generation, "tool/0", "test.unsure")
	if err := e.Ledger.Resolve(ctx, first.Tenant, "test.unsure", key, ledger.Resolution{Done: true, Note: "seen in the shop"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Operator.Replay(ctx, "", id); err != nil {
		t.Fatal(err)
	}
	res, err := runner.Work(ctx, e.claim())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res), `"replayed":true,"resolved":true`) {
		t.Fatalf("result %s, want the step served and marked resolved", res)
	}
}
