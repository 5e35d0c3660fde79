package client

import (
	"cmp"
	"context"
	"errors"
	"math"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/admit"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/operator"
	"github.com/agentledger/agentledger/waits"
)

// Database submits straight into the database, for tenant ("" is the
// operator's "default"). db is a pgx pool, connection or transaction: in a
// transaction the task is made only if the transaction commits. Its tasks
// pass the door as the operator's (package admit): claims' limits, the
// schema the serving daemon published for a typed kind, a steps payload's
// structure. It queues a task whether or not a live worker serves its kind
// (the API and agentctl check that): a program writing its own tasks,
// often before any daemon is up, knows what it queues. Its signals pass
// the door as the operator's too, and are sent by "operator". A pool of
// the program's own should check the database's identity as each
// connection opens (AfterConnect: database.GuardIDs(logger); a nil logger
// logs nothing), as agentd's do, so that after a failover that lost
// commits no task id is issued twice.
func Database(db claims.DB, tenant string) Client {
	return Through(db, &admit.Door{}, tenant)
}

// Through is Database through door: a daemon's (daemon.Daemon.Client),
// which checks its tenants' typed kinds in process and whose idle workers
// take a task they would run now at its enqueue, without a claim.
func Through(db claims.DB, door *admit.Door, tenant string) Client {
	return dbSubmitter{db: db, door: door, tenant: tenant}
}

type dbSubmitter struct {
	db     claims.DB
	door   *admit.Door
	tenant string
}

func (d dbSubmitter) Submit(ctx context.Context, r Request) (*agentledger.Task, error) {
	p := claims.EnqueueParams{Tenant: d.tenant, Queue: r.Queue, Kind: r.Kind, Payload: r.Payload,
		Priority: int16(min(max(r.Priority, math.MinInt16), math.MaxInt16)), // the door refuses outside 0..100
		RunAt:    r.RunAt, MaxAttempts: r.MaxAttempts, SubmissionKey: r.Key}
	res, err := d.door.Enqueue(ctx, d.db, admit.Submission{Caller: admit.Operator, Params: p, Unserved: true})
	if err != nil {
		return nil, err
	}
	return res.Task, nil
}

func (d dbSubmitter) Send(ctx context.Context, s Signal) (Sent, error) {
	sent, err := d.door.Signal(ctx, d.db, admit.SignalSubmission{Caller: admit.Operator, Params: waits.SignalParams{
		Tenant: d.tenant, Name: s.Name, Key: s.Key, Payload: s.Payload, DedupeKey: s.IdempotencyKey, Retention: s.Retention}})
	if err != nil {
		return Sent{}, err
	}
	return Sent{Signal: sent.Signal, Duplicate: sent.Duplicate}, nil
}

func (d dbSubmitter) Task(ctx context.Context, id int64) (*agentledger.Task, error) {
	return claims.New(d.db).Get(ctx, cmp.Or(d.tenant, claims.DefaultTenant), id)
}

func (d dbSubmitter) Cancel(ctx context.Context, id int64) (*agentledger.Task, error) {
	tenant := cmp.Or(d.tenant, claims.DefaultTenant)
	t, err := operator.New(d.db).Cancel(ctx, tenant, id)
	if errors.Is(err, agentledger.ErrConflict) {
		// Cancelling a cancelled task asks for what is, as the API answers.
		if cur, gerr := claims.New(d.db).Get(ctx, tenant, id); gerr == nil && cur.State == agentledger.StateCancelled {
			return cur, nil
		}
	}
	return t, err
}

func (d dbSubmitter) Replay(ctx context.Context, id int64) (*agentledger.Task, error) {
	p, err := operator.New(d.db).Replay(ctx, cmp.Or(d.tenant, claims.DefaultTenant), id)
	if err != nil {
		return nil, err
	}
	return p.Task, nil
}

func (d dbSubmitter) Waits(ctx context.Context, q WaitQuery) ([]waits.Wait, error) {
	return waits.NewStore(d.db).List(ctx, waits.ListParams{Tenant: cmp.Or(d.tenant, claims.DefaultTenant), TaskID: q.TaskID,
		Kind: q.Kind, States: q.States, Limit: q.Limit})
}
