package daemon

import (
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/tools"
)

// approvalPolicy is the gate of an effect whose call declares none: its
// tool's (a tool defined with Spec.Approval), else the one
// Policy.ToolApprovals names for it, else, with Policy.ApproveUnsafe,
// Policy.Approval for an unsafe effect.
func approvalPolicy(p Policy) func(o *tools.Outgoing) *tools.Approval {
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
		if p.ApproveUnsafe && o.Effect.Class == ledger.Unsafe {
			return unsafe
		}
		return nil
	}
}
