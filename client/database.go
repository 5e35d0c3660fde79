package client

import (
	"context"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
)

// Database submits straight into the database, for tenant ("" is the
// operator's "default"). db is a pgx pool, connection or transaction: in a
// transaction the task is made only if the transaction commits. It checks
// neither the payload against a published schema nor that a live worker
// serves the kind (the API and agentctl do): a program writing its own
// tasks, often before any daemon is up, knows what it queues.
func Database(db claims.DB, tenant string) Submitter {
	return dbSubmitter{s: claims.New(db), tenant: tenant}
}

type dbSubmitter struct {
	s      *claims.Store
	tenant string
}

func (d dbSubmitter) Submit(ctx context.Context, r Request) (*agentledger.Task, error) {
	p := claims.EnqueueParams{Tenant: d.tenant, Queue: r.Queue, Kind: r.Kind, Payload: r.Payload,
		Priority: int16(r.Priority), RunAt: r.RunAt, MaxAttempts: r.MaxAttempts, SubmissionKey: r.Key}
	if r.Priority < 0 || r.Priority > 100 {
		return nil, agentledger.Invalid("priority", "%d is outside 0..100 (lower runs first)", r.Priority)
	}
	res, err := d.s.Enqueue(ctx, p)
	if err != nil {
		return nil, err
	}
	return res.Task, nil
}
