package claims

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/tracing"
)

// ClaimParams says what to claim and for whom.
type ClaimParams struct {
	Queue  string
	Worker string        // lease owner recorded on the task and the attempt
	Limit  int           // at most this many tasks
	Lease  time.Duration // how long the lease lasts without a heartbeat
	// Kinds restricts the claim to tasks this worker can run; empty claims
	// any kind. A daemon that lacks a new kind's handler (a rolling deploy)
	// then leaves those tasks to daemons that have it.
	Kinds []string
	// Caps are what the claiming pool can run beyond its kinds (see
	// registry.Caps): a task whose needs are not all among them is left to
	// a pool that has them. Nil claims any task; empty, only the tasks
	// that need nothing.
	Caps []string
	// DueOnly claims due queued and retrying tasks only, leaving running
	// tasks whose lease expired to a later claim without it. A worker
	// claims this way when woken by a new task, and in full on its poll:
	// the lean statement does a third of the work, and an expired lease
	// can wait for the next poll (it already waited out the lease).
	DueOnly bool
	// Hint, when set, carries from one claim of the queue to the next
	// where the rotation of its tenants stands, and (for due-only claims)
	// whether it found one tenant's tasks alone, or several tenants': the
	// next then tries a lean statement first. One ClaimHint per claiming loop; without one,
	// every claim starts its rotation at the first tenant by name.
	Hint *ClaimHint
	// trusted, for a run claim, skips its proof of a crowd (ClaimHint.ran).
	trusted bool
}

// Claim leases up to p.Limit runnable tasks of p.Queue to p.Worker in one
// statement: due queued or retrying tasks, shared among their tenants by
// weight and within each tenant's cap on running tasks, and running tasks
// whose lease expired (their previous attempt is closed as lease_expired). Each claimed
// task carries a new fencing token in LeaseToken; use Lease(task) for the
// attempt's later writes.
func (s *Store) Claim(ctx context.Context, p ClaimParams) ([]*agentledger.Task, error) {
	if p.Limit <= 0 || p.Queue == "" || p.Worker == "" || p.Lease <= 0 {
		return nil, fmt.Errorf("claim: %w: queue, worker, limit and lease are required", agentledger.ErrInvalid)
	}
	q := claimSQL
	if p.DueOnly {
		q = claimDueSQL
		if p.Hint.likely() {
			tasks, err := s.claim(ctx, claimAloneSQL, p)
			if err == nil {
				p.Hint.took(tasks, p.Limit)
			}
			if err != nil || len(tasks) > 0 {
				if len(tasks) > 0 {
					p.Hint.after(nil) // a hit: try alone next time too
				}
				return tasks, err
			}
			// Nothing alone: nothing due (or not yet: a task may commit
			// between the two statements), another tenant, or a cap —
			// which the full claim tells apart.
			tasks, err = s.claim(ctx, q, p)
			if err == nil {
				p.Hint.after(tasks)
			}
			return tasks, err
		}
		if p.Hint.crowded() {
			return s.claimRun(ctx, q, p)
		}
	}
	return s.full(ctx, q, p)
}

// claimRun claims by the run claim first (claimRunSQL), and by q, the
// full due-only claim, where the run answers nothing or fails, or for
// what a short run left of the batch.
func (s *Store) claimRun(ctx context.Context, q string, p ClaimParams) ([]*agentledger.Task, error) {
	run := p
	run.trusted = p.Hint.trusted(p.Limit)
	tasks, err := s.claim(ctx, claimRunSQL, run)
	switch {
	case err != nil:
		// The full claim may still serve: a loop must not stall on an
		// error of the lean statement alone.
		p.Hint.ranShort()
		if ctx.Err() != nil {
			return nil, err
		}
		full, ferr := s.full(ctx, q, p)
		if ferr != nil {
			return nil, fmt.Errorf("%w (after the run claim failed: %v)", ferr, err)
		}
		return full, nil
	case len(tasks) == p.Limit:
		p.Hint.ran(p.Limit, true, run.trusted)
		return tasks, nil
	case len(tasks) == 0:
		// No crowd of thin tenants from the cursor on (or nothing due):
		// the full claim tells, and wraps around.
		p.Hint.ranShort()
		return s.full(ctx, q, p)
	}
	// Short: topped up. Less than half a batch counts as a miss, so that
	// a loop whose runs keep coming back short (deep tenants among thin
	// ones, other daemons' locks) does not send two statements at every
	// claim.
	if 2*len(tasks) < p.Limit {
		p.Hint.ranShort()
	} else {
		p.Hint.ran(p.Limit, false, run.trusted)
	}
	return s.topUp(ctx, q, p, tasks), nil
}

// full claims with q, the full claim or the full due-only one, and notes
// what a due-only claim got in the hint.
func (s *Store) full(ctx context.Context, q string, p ClaimParams) ([]*agentledger.Task, error) {
	tasks, err := s.claim(ctx, q, p)
	if err == nil && p.DueOnly {
		p.Hint.saw(tasks)
	}
	return tasks, err
}

// topUp fills a run claim that came back short — its read of the index
// ended (the rotation's end, deeper tenants, rows other claims held) —
// with a full claim of the rest, which starts where the run left the
// rotation: a short batch would leave the loop waiting for a notification
// or its poll with work due. The run's tasks are leased already (a claim
// commits on its own: the daemon's claims run on a pool) and are returned
// whatever the second claim does: an error of it comes again at the
// loop's next claim. The rest is not what a full claim of the loop looks
// like (a tenant or two past the run), so the hint does not learn from it.
func (s *Store) topUp(ctx context.Context, q string, p ClaimParams, tasks []*agentledger.Task) []*agentledger.Task {
	rest := p
	rest.Limit = p.Limit - len(tasks)
	more, err := s.claim(ctx, q, rest)
	if err != nil {
		return tasks
	}
	tasks = append(tasks, more...)
	slices.SortFunc(tasks, claimOrder)
	return tasks
}

func (s *Store) claim(ctx context.Context, q string, p ClaimParams) ([]*agentledger.Task, error) {
	began := time.Now()
	args := []any{p.Queue, p.Worker, p.Limit, p.Lease, s.Now.Param(), p.Kinds, p.Caps}
	from, got := "", 0
	if q == claimAloneSQL {
		tenant, mark, past := p.Hint.alone()
		args = append(args, tenant, mark.priority, mark.runAt, mark.id, past)
	} else {
		s.place(ctx, p.Hint)
		from, got = p.Hint.cursor()
		args = append(args, from, got, p.Hint.lane(p.Limit))
		if q == claimRunSQL {
			args = append(args, p.trusted)
		}
	}
	unreplicated := watchCommit(s.db)
	rows, err := s.db.Query(ctx, q, args...)
	if err == nil {
		var tasks []*agentledger.Task
		var laned map[int64]bool
		// The run claim says where it left the rotation; after any other
		// the database is asked (lastServed).
		run := q == claimRunSQL
		var last *string
		var lastCol **string
		if run {
			lastCol = &last
		}
		if tasks, laned, err = collectClaimed(rows, lastCol); err == nil && unreplicated() {
			err = &UnreplicatedError{Tasks: len(tasks)}
		} else if err == nil {
			// In claim order: the due-only claims (claimedDue) answer in no order.
			slices.SortFunc(tasks, claimOrder)
			if p.Hint != nil {
				// The cursor follows the rotation: a newcomer the lane
				// served may be anywhere in the ring.
				rotation := tasks
				if laned != nil {
					rotation = slices.DeleteFunc(slices.Clone(tasks), func(t *agentledger.Task) bool { return laned[t.ID] })
				}
				served := deref(last)
				if !run {
					served = s.lastServed(ctx, from, rotation, &p.Hint.order)
				}
				p.Hint.served(from, got, served, rotation, len(laned))
			}
			if len(tasks) > 0 && tracing.Enabled() {
				traceClaim(ctx, began, p, tasks, nil)
			}
			return tasks, nil
		}
	}
	if tracing.Enabled() {
		traceClaim(ctx, began, p, nil, err)
	}
	return nil, fmt.Errorf("claim: %w", err)
}

// claimOrder orders tasks as a claim takes them: priority, then run_at,
// then id.
func claimOrder(a, b *agentledger.Task) int {
	if c := cmp.Compare(a.Priority, b.Priority); c != 0 {
		return c
	}
	if c := a.RunAt.Compare(b.RunAt); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}

// traceClaim records a claim that took tasks, or failed, as a span from
// began to now, linked to the trace of each claimed task's submission (or
// replay). The span is made after the statement, so that the claims that
// find nothing — an idle daemon's polls — leave no span at all.
func traceClaim(ctx context.Context, began time.Time, p ClaimParams, tasks []*agentledger.Task, err error) {
	_, span := tracing.Start(ctx, "agentledger.claim", trace.WithSpanKind(trace.SpanKindConsumer), trace.WithTimestamp(began))
	defer span.End()
	span.SetAttributes(tracing.TaskQueue.String(p.Queue), tracing.Worker.String(p.Worker),
		tracing.TaskCount.Int(len(tasks)), attribute.Bool("agentledger.claim.due_only", p.DueOnly))
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	for _, t := range tasks {
		tp := t.ReplayTraceParent
		if tp == "" {
			tp = t.TraceParent
		}
		if sc := tracing.SpanContext(tp); sc.IsValid() {
			span.AddLink(trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{tracing.TaskID.Int64(t.ID)}})
		}
	}
}

// LeaseOf returns the lease a claimed task carries.
func LeaseOf(t *agentledger.Task) agentledger.Lease {
	return agentledger.Lease{TaskID: t.ID, Token: t.LeaseToken}
}

// HeartbeatResult says, per lease, whether it was renewed.
type HeartbeatResult struct {
	// Lost are the leases whose token is no longer current or whose lease
	// expired: their attempts must stop at once.
	Lost []agentledger.Lease
	// Cancel are renewed leases whose task an operator asked to cancel.
	Cancel []agentledger.Lease
	// Busy are leases that still hold but were not renewed this time: their
	// row was locked (the outcome being written, the ledger reserving).
	Busy []agentledger.Lease
}

// Heartbeat renews leases by d from the database's now, fenced on each token
// and on the lease not having expired, in one statement.
func (s *Store) Heartbeat(ctx context.Context, leases []agentledger.Lease, d time.Duration) (HeartbeatResult, error) {
	var res HeartbeatResult
	if len(leases) == 0 {
		return res, nil
	}
	ids, tokens := split(leases)
	rows, err := s.db.Query(ctx, heartbeatSQL, ids, tokens, s.Now.Param(), d)
	if err != nil {
		return res, fmt.Errorf("heartbeat: %w", err)
	}
	renewed := map[int64]bool{}
	for rows.Next() {
		var id int64
		var cancel bool
		if err := rows.Scan(&id, &cancel); err != nil {
			rows.Close()
			return res, fmt.Errorf("heartbeat: %w", err)
		}
		renewed[id] = cancel
	}
	if err := rows.Err(); err != nil {
		return res, fmt.Errorf("heartbeat: %w", err)
	}
	var skipped []agentledger.Lease
	for _, l := range leases {
		cancel, ok := renewed[l.TaskID]
		switch {
		case !ok:
			skipped = append(skipped, l)
		case cancel:
			res.Cancel = append(res.Cancel, l)
		}
	}
	if len(skipped) == 0 {
		return res, nil
	}
	ids, tokens = split(skipped)
	rows, err = s.db.Query(ctx, currentSQL, ids, tokens, s.Now.Param())
	if err != nil {
		return res, fmt.Errorf("heartbeat: %w", err)
	}
	current, err := collectIDs(rows)
	if err != nil {
		return res, fmt.Errorf("heartbeat: %w", err)
	}
	for _, l := range skipped {
		if current[l.TaskID] {
			res.Busy = append(res.Busy, l)
		} else {
			res.Lost = append(res.Lost, l)
		}
	}
	return res, nil
}

func split(leases []agentledger.Lease) (ids, tokens []int64) {
	ids = make([]int64, len(leases))
	tokens = make([]int64, len(leases))
	for i, l := range leases {
		ids[i], tokens[i] = l.TaskID, l.Token
	}
	return ids, tokens
}
