package steps_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/saga"
	"github.com/agentledger/agentledger/steps"
	"github.com/agentledger/agentledger/tools"
)

// revokeOnce returns an after hook for the post tool that, on its first
// call, revokes tool from acme's grant as agentctl tenant revoke does.
func revokeOnce(t *testing.T, store *grants.Store, tool string) func(json.RawMessage) error {
	done := false
	return func(json.RawMessage) error {
		if done {
			return nil
		}
		done = true
		_, err := store.Update(context.Background(), "acme", func(g *grants.Grant) {
			g.Tools = slices.DeleteFunc(g.Tools, func(n string) bool { return n == tool })
		})
		if err != nil {
			t.Error(err)
		}
		return nil
	}
}

// A revoke reaches a task in flight: the grant is read again before each
// step, so a tool revoked while step 0 runs is refused at step 1, which
// performs and records nothing.
func TestRevokeStopsTheNextStep(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	store := grants.NewStore(e.DB)
	if err := store.Put(context.Background(), "acme", &grants.Grant{Tools: []string{"post"}}); err != nil {
		t.Fatal(err)
	}
	e.runner.Grants = store
	e.tool.after = revokeOnce(t, store, "post")
	e.Enqueue(claims.EnqueueParams{Tenant: "acme", Payload: json.RawMessage(`{"steps":[{"tool":"post","args":{"n":0}},{"tool":"post","args":{"n":1}}]}`)})
	task := e.claim()
	_, err := e.runner.Work(context.Background(), task)
	var denied *grants.DeniedError
	if !errors.As(err, &denied) || !strings.Contains(err.Error(), "step 1") {
		t.Fatalf("work: %v, want step 1 denied", err)
	}
	if got := e.performed("n"); len(got) != 1 {
		t.Errorf("performed %v, want step 0 only", got)
	}
	for _, en := range e.Journal(task) {
		if en.StepPath != "tool/0" {
			t.Errorf("recorded %s (%s)", en.StepPath, en.State)
		}
	}
}

// A compensation phase reads the grant before each compensation: one
// revoked by the compensation before it is refused, performing nothing.
func TestRevokeStopsTheNextCompensation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	undoTool := &post{url: e.down.URL} // the compensations' tool, named "post" too: its own registry
	store := grants.NewStore(e.DB)
	if err := store.Put(ctx, "acme", &grants.Grant{Tools: []string{"post", "ship"}}); err != nil {
		t.Fatal(err)
	}
	reg := tools.NewRegistry(e.tool, &ship{})
	runner := steps.New(e.Ledger, reg)
	runner.Grants = store
	phase := saga.Phase(runner, &saga.Undoer{Ledger: e.Ledger, Journal: e.Ledger, Tools: tools.NewRegistry(undoTool, &ship{}),
		Grants: store})
	e.Enqueue(claims.EnqueueParams{Tenant: "acme", Payload: json.RawMessage(`{"steps":[` +
		`{"tool":"post","args":{"n":0},"compensate":{"tool":"post","args":{"undo":0}}},` +
		`{"tool":"post","args":{"n":1},"compensate":{"tool":"post","args":{"undo":1}}},` +
		`{"tool":"ship"}]}`)})
	task := e.claim()
	_, err := phase.Work(ctx, task)
	if e.fail(task, err) != agentledger.StateCompensating {
		t.Fatalf("forward path: %v, want compensating", err)
	}
	undoTool.after = revokeOnce(t, store, "post")
	task = e.claim()
	_, err = phase.Work(ctx, task)
	var denied *grants.DeniedError
	if !errors.As(err, &denied) || !strings.Contains(err.Error(), "compensation of tool/0") {
		t.Fatalf("compensation: %v, want tool/0's denied", err)
	}
	if len(undoTool.seen) != 1 || !strings.Contains(string(undoTool.seen[0]), `"undo":1`) {
		t.Errorf("undone %s, want step 1's only", undoTool.seen)
	}
	// Recorded failed, for an operator to settle; nothing was sent.
	for _, en := range e.Journal(task) {
		if en.StepPath == saga.PathOf("tool/0") && (en.State != ledger.StateFailed || en.Performed != 0) {
			t.Errorf("recorded %s (%s, performed %d)", en.StepPath, en.State, en.Performed)
		}
	}
}
