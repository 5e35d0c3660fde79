package daemon

import (
	"testing"

	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/tools"
)

// The policy gates what a call does not: a tool named in ToolApprovals,
// an unsafe effect with ApproveUnsafe, an MCP server's destructive tool
// when the server says so — and nothing else.
func TestApprovalPolicyGates(t *testing.T) {
	gate := &tools.Approval{Approvers: []string{"U1"}}
	out := func(name string, class ledger.Class) *tools.Outgoing {
		return &tools.Outgoing{ToolName: name, Effect: ledger.Effect{Class: class}}
	}
	servers := []MCPServer{{Name: "shop", ApproveDestructive: true}, {Name: "crm"}}
	policy := approvalPolicy(Policy{Approval: gate, ToolApprovals: map[string]*tools.Approval{"refund": gate}}, servers)
	for _, c := range []struct {
		o     *tools.Outgoing
		gated bool
	}{
		{out("shop/charge", ledger.Unsafe), true},  // a destructive tool of a server that asks
		{out("shop/lookup", ledger.Pure), false},   // not destructive
		{out("shop/reserve", ledger.Keyed), false}, // idempotent
		{out("crm/delete", ledger.Unsafe), false},  // a server that does not ask
		{out("shopping/x", ledger.Unsafe), false},  // another server, a longer name
		{out("refund", ledger.Keyed), true},        // named
		{out("unsafe_http", ledger.Unsafe), false}, // no ApproveUnsafe
	} {
		if got := policy(c.o); (got != nil) != c.gated || (got != nil && got != gate) {
			t.Errorf("%s (%s): gate %+v, want gated %v", c.o.Name(), c.o.Effect.Class, got, c.gated)
		}
	}
	all := approvalPolicy(Policy{ApproveUnsafe: true}, nil)
	if a := all(out("unsafe_http", ledger.Unsafe)); a == nil || a.OnTimeout != "deny" || a.Timeout != tools.DefaultApprovalTimeout {
		t.Errorf("ApproveUnsafe with no Approval: %+v, want the defaults", a)
	}
}
