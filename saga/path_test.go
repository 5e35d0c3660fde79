package saga_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testenv"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/saga"
	"github.com/agentledger/agentledger/tools"
)

// A Go kind's calls and their compensations take the Undoer's Path, so an
// interceptor on it sees both.
func TestCallsAndCompensationsTakeThePath(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := testenv.New(t)
	s := &shop{done: map[string]string{}}
	reg := tools.NewRegistry(s.tool(t))
	var seen []string
	note := func(ctx context.Context, o *tools.Outgoing, next tools.Next) (ledger.Result, error) {
		seen = append(seen, o.Tool.Name()+" "+o.StepPath)
		return next(ctx, o)
	}
	undoer := &saga.Undoer{Ledger: e.Ledger, Journal: e.Ledger, Tools: reg,
		Path: &tools.Path{Ledger: e.Ledger, Tools: reg, Interceptors: []tools.Interceptor{note}}}
	kind := saga.Phase(handler(func(ctx context.Context, task *agentledger.Task) (json.RawMessage, error) {
		undo := &saga.Compensation{Tool: "shop", Args: json.RawMessage(`{"op":"uncharge","of":"${self.body.id}"}`)}
		if _, err := saga.Call(ctx, task, "charge", "shop", order{Op: "charge", Order: 7}, undo); err != nil {
			return nil, err
		}
		return nil, agentledger.Permanent(errors.New("no courier"))
	}), undoer)

	e.Enqueue(claims.EnqueueParams{Kind: "order"})
	task := e.Claim("w")
	_, err := kind.Work(ctx, task)
	if _, ferr := e.Claims.Fail(ctx, claims.Failure{Lease: claims.LeaseOf(task), Error: err.Error(), Final: true}); ferr != nil {
		t.Fatal(ferr)
	}
	if _, err := kind.Work(ctx, e.Claim("w")); err != nil {
		t.Fatal(err)
	}
	if want := []string{"shop call/charge", "shop compensate/call/charge"}; !slices.Equal(seen, want) {
		t.Fatalf("the interceptor saw %q, want %q", seen, want)
	}
}
