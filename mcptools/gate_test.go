package mcptools_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/flow"
	"github.com/agentledger/agentledger/internal/test/testenv"
	"github.com/agentledger/agentledger/mcptools"
	"github.com/agentledger/agentledger/tools"
)

// Calls to an MCP server go through its fleet-wide limit: over its rate
// the task waits and the server sees nothing; a replay is served from the
// ledger without asking the gate.
func TestCallsWaitForTheServersLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := testenv.New(t)
	if _, err := flow.NewStore(e.DB).Put(ctx, flow.Limit{Target: flow.MCP("shop"), Rate: flow.Rate{N: 1, Per: time.Minute}}); err != nil {
		t.Fatal(err)
	}
	c := &counting{calls: map[string]int{}, keys: map[string][]string{}}
	ts := byName(connectWith(t, c, mcptools.Options{}))
	gated := &tools.Path{Ledger: e.Ledger, Gate: flow.NewLimiter(e.DB, nil)}
	e.Enqueue(claims.EnqueueParams{})
	task := e.Claim("w")
	first := tools.Call{Task: task, StepPath: "tool/0", Args: []byte(`{"order":7}`)}
	if _, err := gated.Perform(ctx, &tools.Outgoing{Call: first, Tool: ts["shop/reserve"]}); err != nil {
		t.Fatal(err)
	}
	_, err := gated.Perform(ctx, &tools.Outgoing{Call: tools.Call{Task: task, StepPath: "tool/1", Args: []byte(`{"order":7}`)}, Tool: ts["shop/charge"]})
	var d *agentledger.DeferredError
	if !errors.As(err, &d) || d.Target != "mcp:shop" || !strings.Contains(d.Reason, "rate limit") || c.count("charge") != 0 {
		t.Fatalf("over the rate: %v, %d charges", err, c.count("charge"))
	}
	if again, err := gated.Perform(ctx, &tools.Outgoing{Call: first, Tool: ts["shop/reserve"]}); err != nil || !again.Replayed {
		t.Fatalf("replay: %+v %v, want served from the ledger", again, err)
	}
}
