package daemon_test

import (
	"context"
	"os"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/daemon"
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
		// … call the payments API through a keyed tool, or directly if it
		// is the task's only effect …
		return map[string]any{"refunded": r.Amount}, nil
	}))
	if err != nil {
		panic(err)
	}
	_ = d.Run(context.Background()) // until the context ends
}
