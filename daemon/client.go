package daemon

import (
	"context"
	"errors"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/client"
	"github.com/agentledger/agentledger/waits"
)

// ErrNotRunning is what a Client's calls return before the daemon is
// Ready and after its Run has returned.
var ErrNotRunning = errors.New("daemon: not running: a Client submits between Ready and the end of Run")

// Client submits tasks and sends signals through this daemon, for tenant
// ("" is the operator's "default"), as client.Database does over the
// daemon's own database pool. Its tasks pass the daemon's door, which
// checks its typed kinds in process, and a task this daemon's workers
// would run now — its kind and needs served, a slot free, nothing due
// left at their last claim — is leased to them as it is inserted and
// starts without a claim (claims.Store.EnqueueStart). Its calls fail with
// ErrNotRunning outside Run (from Ready on). A tenant's task runs under
// that tenant's grant, call by call: a Go kind's handler needs a grant for
// every tool it calls, which the door, checking the payload, cannot see.
func (d *Daemon) Client(tenant string) client.Client { return daemonClient{d: d, tenant: tenant} }

type daemonClient struct {
	d      *Daemon
	tenant string
}

// through is the client of the running daemon, or ErrNotRunning.
func (c daemonClient) through() (client.Client, error) {
	c.d.mu.Lock()
	defer c.d.mu.Unlock()
	if c.d.db == nil {
		return nil, ErrNotRunning
	}
	return client.Through(c.d.db, c.d.door, c.tenant), nil
}

// via runs call on the client of the running daemon, or refuses with
// ErrNotRunning.
func via[T any](c daemonClient, call func(client.Client) (T, error)) (T, error) {
	cl, err := c.through()
	if err != nil {
		var none T
		return none, err
	}
	return call(cl)
}

func (c daemonClient) Submit(ctx context.Context, r client.Request) (*agentledger.Task, error) {
	return via(c, func(cl client.Client) (*agentledger.Task, error) { return cl.Submit(ctx, r) })
}

func (c daemonClient) Send(ctx context.Context, s client.Signal) (client.Sent, error) {
	return via(c, func(cl client.Client) (client.Sent, error) { return cl.Send(ctx, s) })
}

func (c daemonClient) Task(ctx context.Context, id int64) (*agentledger.Task, error) {
	return via(c, func(cl client.Client) (*agentledger.Task, error) { return cl.Task(ctx, id) })
}

func (c daemonClient) Cancel(ctx context.Context, id int64) (*agentledger.Task, error) {
	return via(c, func(cl client.Client) (*agentledger.Task, error) { return cl.Cancel(ctx, id) })
}

func (c daemonClient) Replay(ctx context.Context, id int64) (*agentledger.Task, error) {
	return via(c, func(cl client.Client) (*agentledger.Task, error) { return cl.Replay(ctx, id) })
}

func (c daemonClient) Waits(ctx context.Context, q client.WaitQuery) ([]waits.Wait, error) {
	return via(c, func(cl client.Client) ([]waits.Wait, error) { return cl.Waits(ctx, q) })
}

// stopped ends the Client's calls: Run is returning, and its pool closes.
func (d *Daemon) stopped() {
	d.mu.Lock()
	d.db = nil
	d.mu.Unlock()
}
