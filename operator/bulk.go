package operator

import (
	"context"
	"errors"
	"slices"

	"github.com/agentledger/agentledger"
)

// BulkResult is what a bulk action did.
type BulkResult struct {
	// Done are the tasks acted on.
	Done []int64
	// Flagged are, for a cancel, the running tasks asked to stop: each
	// stops before its attempt's next call (not among Done).
	Flagged []int64
	// Skipped are the tasks the action did not apply to, with why.
	Skipped map[int64]string
}

// bulkPage is how many ids a bulk action reads at a time.
const bulkPage = 1000

// RetryAll retries every dead task of the filter (whatever its States say),
// page by page. Tasks that cannot be retried (retention removed their
// ledger, or they changed meanwhile) are skipped, with the reason.
func (s *Service) RetryAll(ctx context.Context, p ListParams) (BulkResult, error) {
	p.States = []agentledger.TaskState{agentledger.StateDead}
	return s.each(ctx, p, func(id int64) error {
		_, err := s.Retry(ctx, p.Tenant, id)
		return err
	})
}

// CancelAll cancels every unfinished task of the filter: queued and
// waiting ones at once (a waiting task's request or wait is withdrawn),
// running ones before their next call (Cancel).
func (s *Service) CancelAll(ctx context.Context, p ListParams) (BulkResult, error) {
	return s.CancelAllBy(ctx, p, "")
}

// CancelAllBy is CancelAll on behalf of by (CancelBy); "" is the operator.
func (s *Service) CancelAllBy(ctx context.Context, p ListParams, by string) (BulkResult, error) {
	if len(p.States) == 0 {
		p.States = []agentledger.TaskState{agentledger.StateQueued, agentledger.StateWaiting, agentledger.StateRetrying,
			agentledger.StateRunning, agentledger.StateNeedsAttention}
	}
	var flagged []int64
	res, err := s.each(ctx, p, func(id int64) error {
		t, err := s.CancelBy(ctx, p.Tenant, id, by)
		if err == nil && t.State == agentledger.StateRunning {
			flagged = append(flagged, id)
		}
		return err
	})
	res.Done = slices.DeleteFunc(res.Done, func(id int64) bool { return slices.Contains(flagged, id) })
	res.Flagged = flagged
	return res, err
}

// each runs act on every task of the filter, newest first, one task at a
// time, so each is its own transition of the claim protocol and a task
// that changed meanwhile is skipped rather than forced: ErrConflict and
// ErrNotFound from act skip the task.
func (s *Service) each(ctx context.Context, p ListParams, act func(id int64) error) (BulkResult, error) {
	res := BulkResult{Skipped: map[int64]string{}}
	var before int64
	for {
		ids, err := s.tasks.IDs(ctx, p, before, bulkPage)
		if err != nil {
			return res, err
		}
		for _, id := range ids {
			switch err := act(id); {
			case err == nil:
				res.Done = append(res.Done, id)
			case errors.Is(err, agentledger.ErrConflict), errors.Is(err, agentledger.ErrNotFound):
				res.Skipped[id] = err.Error()
			default:
				return res, err
			}
		}
		if len(ids) < bulkPage {
			return res, nil
		}
		if s.BulkProgress != nil {
			s.BulkProgress(len(res.Done) + len(res.Skipped))
		}
		before = ids[len(ids)-1]
	}
}
