package daemon

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/tools"
)

// approvalPolicy is the gate of an effect whose call declares none: its
// tool's (a tool defined with Spec.Approval), else the one
// Policy.ToolApprovals names for it, else Policy.Approval when the
// tenant's grant asks for one (grants.Grant.Approve), else Policy.Approval for an unsafe
// effect when Policy.ApproveUnsafe says so, or when it is a destructive
// tool of an MCP server of servers with ApproveDestructive.
func approvalPolicy(p Policy, servers []MCPServer) func(o *tools.Outgoing) *tools.Approval {
	var destructive []string // prefixes of the servers' tools: "shop/"
	for _, s := range servers {
		if s.ApproveDestructive {
			destructive = append(destructive, s.Name+"/")
		}
	}
	unsafe := p.Approval
	if unsafe == nil {
		unsafe = &tools.Approval{Timeout: tools.DefaultApprovalTimeout, OnTimeout: "deny"}
	}
	return func(o *tools.Outgoing) *tools.Approval {
		if a := tools.ApprovalOf(o); a != nil {
			return a
		}
		if a := p.ToolApprovals[o.Name()]; a != nil {
			return a
		}
		if o.Grant != nil && o.Grant.Approve != nil && o.Grant.NeedsApproval(reach(o)) {
			return unsafe // the tenant's grant asks, with the policy's approvers and timeout
		}
		if o.Effect.Class != ledger.Unsafe {
			return nil
		}
		if p.ApproveUnsafe || slices.ContainsFunc(destructive, func(prefix string) bool { return strings.HasPrefix(o.Name(), prefix) }) {
			return unsafe
		}
		return nil
	}
}

// reach is what o's call reaches, as its grant reads it: the tool, and its
// host or channel when the tool says (tools.Reacher).
func reach(o *tools.Outgoing) grants.Need {
	var n grants.Need
	if r, ok := o.Tool.(tools.Reacher); ok {
		n, _ = r.Reach(o.Call) // a call it cannot read was refused by the grant stage already
	}
	n.Tool = o.Name()
	return n
}

// checkApprovals refuses a gate of p that would not gate as written: one
// the approvals store refuses (every gated call would fail, and be tried
// again), a nil one (its tool would go ungated), or one for a name no
// tool can have.
func checkApprovals(p Policy) error {
	if p.Approval != nil {
		if err := p.Approval.Check(); err != nil {
			return &ConfigError{fmt.Errorf("%s: %w", setting("Policy.Approval", "--approvers and --approval-timeout"), err)}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(p.ToolApprovals)) {
		field := setting(fmt.Sprintf("Policy.ToolApprovals[%q]", name), "--approve-tools")
		a := p.ToolApprovals[name]
		if a == nil {
			return &ConfigError{fmt.Errorf("%s: nil, which would leave the tool ungated: &tools.Approval{} gates it with the defaults", field)}
		}
		if err := tools.CheckName(name); err != nil {
			return &ConfigError{fmt.Errorf("%s: %w", field, err)}
		}
		if err := a.Check(); err != nil {
			return &ConfigError{fmt.Errorf("%s: %w", field, err)}
		}
	}
	return nil
}
