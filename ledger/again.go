package ledger

import (
	"context"

	"github.com/agentledger/agentledger/dbaway"
)

// again runs write, the fenced write of a performed effect's outcome,
// until it is answered or fails for another reason than the database being
// away (a restart, a failover): the effect happened and its outcome is
// known, so a blip must not turn it into an outcome unknown. Sending the
// write again is safe: fenced on the lease and the row, a second one that
// finds the first landed changes nothing and the caller reads back what
// stands. ctx ends with the lease.
func again(ctx context.Context, write func() error) error {
	for attempt := int32(1); ; attempt++ {
		err := write()
		if err == nil || !dbaway.Unavailable(err) || ctx.Err() != nil {
			return err
		}
		if !dbaway.Backoff.Wait(ctx, attempt) {
			return err
		}
	}
}
