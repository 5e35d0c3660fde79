// Package approvals is the gate a person opens: an effect declared as
// needing approval (a step's "approve", an agent tool's, a policy's) is
// not performed until someone decides. The Gate, an interceptor on the
// effect path (tools.Path), records the request — the call exactly as it
// would be performed — once per task, generation and step, and defers the
// task: it waits with no lease, no worker and no attempt counted, until a
// decision wakes it or the request times out. The first decision wins
// (Store.Decide); every later one returns it. An approved effect then
// runs once through the ledger; a denied one is not performed.
//
// A replay finds the decision recorded and asks nobody; a re-run, a new
// generation, asks again; cancelling the task withdraws its request.
package approvals
