package daemon_test

import (
	"context"
	"os"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/daemon"
	"github.com/agentledger/agentledger/saga"
)

// Refund is the payload of the refund kind.
type Refund struct {
	Order  int64 `json:"order"`
	Amount int64 `json:"amount"`
}

// Validate is called after decoding, at submit time through the API and
// again when the task runs.
func (r *Refund) Validate() error {
	if r.Amount <= 0 {
		return agentledger.Invalid("amount", "must be positive")
	}
	return nil
}

// A program embeds the daemon and serves a typed kind of its own beside
// the built-in ones.
func ExampleKind() {
	d := daemon.New(daemon.Config{
		Database: daemon.Database{URL: os.Getenv("DATABASE_URL")},
		API:      daemon.API{Listen: "127.0.0.1:7450"},
	})
	err := d.RegisterKind("refund", daemon.Kind(func(ctx context.Context, t *agentledger.Task, r Refund) (map[string]any, error) {
		// The handler may run again for this task (a crash, a replay):
		// the payments API is called through a registered keyed tool, so
		// that the ledger serves a repeat, never directly
		// (refund_payment: a tools.Define of class ledger.Keyed, given to
		// d.RegisterTool).
		res, err := saga.Call(ctx, t, "refund", "refund_payment", r, nil)
		if err != nil {
			return nil, err
		}
		return map[string]any{"refunded": r.Amount, "payment": res.Body}, nil
	}))
	if err != nil {
		panic(err)
	}
	_ = d.Run(context.Background()) // until the context ends
}
