package claims

import "github.com/agentledger/agentledger"

// LeaseFence is a task's lease as a fence for the writes of other packages
// (the ledger's): the row holds while the task carries the lease's token
// and the lease has not expired. It satisfies ledger.Fence.
type LeaseFence agentledger.Lease

// FenceFrom selects the task row while the lease holds.
func (LeaseFence) FenceFrom(id, token string) string {
	return `tasks WHERE id = ` + id + ` AND lease_token = ` + token + ` AND lease_expires_at > now()`
}

// FenceID is the task's id.
func (f LeaseFence) FenceID() int64 { return f.TaskID }

// FenceToken is the lease's fencing token.
func (f LeaseFence) FenceToken() int64 { return f.Token }
