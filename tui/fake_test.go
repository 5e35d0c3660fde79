package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/approvals"
	"github.com/agentledger/agentledger/flow"
	"github.com/agentledger/agentledger/operator"
	"github.com/agentledger/agentledger/registry"
	"github.com/agentledger/agentledger/waits"
)

// fakeStore is an in-memory Store that records its calls.
type fakeStore struct {
	mu      sync.Mutex
	tasks   []*agentledger.Task // oldest first
	workers []registry.Worker
	limits  []flow.Limit
	usage   []flow.Use
	shares  []operator.Share
	// breakers are the stored breakers, read at epoch.
	breakers []flow.BreakerState
	calls    []string
	// failed are the failed notifications of each task, with their plans;
	// Redeliver requeues them, reopening reopened ledger effects.
	failed   map[int64][]operator.PlannedNotification
	reopened int
	// requests are the approval requests, oldest first; Decide decides a
	// pending one as "op" from the console.
	requests []approvals.Request
	// waits are the waits, oldest first; SendSignal and EndWait end a
	// waiting one.
	waits []Wait
}

// newFakeStore holds n tasks with ids 1..n; every fifth is dead, every
// seventh needs attention, the rest succeeded.
func newFakeStore(n int, now time.Time) *fakeStore {
	s := &fakeStore{}
	for i := 1; i <= n; i++ {
		st := agentledger.StateSucceeded
		switch {
		case i%5 == 0:
			st = agentledger.StateDead
		case i%7 == 0:
			st = agentledger.StateNeedsAttention
		}
		s.tasks = append(s.tasks, &agentledger.Task{ID: int64(i), Tenant: "acme", Queue: []string{"default", "billing"}[i%2],
			Kind: "steps", State: st, Attempt: 1, MaxAttempts: 25, Generation: 1,
			CreatedAt: now.Add(-time.Hour), UpdatedAt: now.Add(-time.Duration(i) * time.Second), RunAt: now.Add(-time.Hour)})
	}
	return s
}

func (s *fakeStore) record(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, fmt.Sprintf(format, args...))
}

// callLog is the calls so far.
func (s *fakeStore) callLog() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...)
}

func (f Filter) match(t *agentledger.Task) bool {
	return (f.State == "" || t.State == f.State) && (f.Queue == "" || t.Queue == f.Queue) &&
		(f.Kind == "" || t.Kind == f.Kind) && (f.Tenant == "" || t.Tenant == f.Tenant)
}

func (s *fakeStore) List(_ context.Context, f Filter, before int64, limit int) ([]*agentledger.Task, error) {
	s.record("list %+v before=%d limit=%d", f, before, limit)
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*agentledger.Task
	for i := len(s.tasks) - 1; i >= 0 && len(out) < limit; i-- {
		if t := s.tasks[i]; (before == 0 || t.ID < before) && f.match(t) {
			out = append(out, t)
		}
	}
	return out, nil
}

func (s *fakeStore) Count(_ context.Context, f Filter) (map[agentledger.TaskState]int64, error) {
	s.record("count %+v", f)
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[agentledger.TaskState]int64{}
	for _, t := range s.tasks {
		if f.match(t) {
			out[t.State]++
		}
	}
	return out, nil
}

func (s *fakeStore) find(id int64) (*agentledger.Task, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.tasks {
		if t.ID == id {
			return t, nil
		}
	}
	return nil, fmt.Errorf("task %d: %w", id, agentledger.ErrNotFound)
}

func (s *fakeStore) Get(_ context.Context, id int64) (*Detail, error) {
	s.record("get %d", id)
	t, err := s.find(id)
	if err != nil {
		return nil, err
	}
	d := &Detail{Detail: operator.Detail{Task: t}}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.requests {
		if r.TaskID == id && r.Generation == t.Generation {
			d.Approvals = append(d.Approvals, r)
		}
	}
	for _, w := range s.waits {
		if w.TaskID == id && w.Generation == t.Generation {
			d.Waits = append(d.Waits, w)
		}
	}
	for _, n := range s.failed[id] {
		d.Notifications = append(d.Notifications, n.Notification)
	}
	return d, nil
}

func (s *fakeStore) ReplayPreview(_ context.Context, id int64) (*Preview, error) {
	s.record("preview %d", id)
	t, err := s.find(id)
	if err != nil {
		return nil, err
	}
	p := &Preview{Task: t}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.requests { // as operator.RefusedCalls
		if r.TaskID == id && r.Generation == t.Generation && slices.Contains([]string{approvals.Denied, approvals.Expired, approvals.Withdrawn}, r.State) {
			p.Refused = append(p.Refused, r)
		}
	}
	return p, nil
}

func (s *fakeStore) RedeliveryPreview(_ context.Context, id int64) (*Redelivery, error) {
	s.record("redelivery-preview %d", id)
	if _, err := s.find(id); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return &Redelivery{Notifications: append([]operator.PlannedNotification{}, s.failed[id]...)}, nil
}

func (s *fakeStore) Redeliver(_ context.Context, id int64) (*Redelivery, error) {
	s.record("redeliver %d", id)
	if _, err := s.find(id); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := &Redelivery{Notifications: append([]operator.PlannedNotification{}, s.failed[id]...), Reopened: s.reopened}
	delete(s.failed, id)
	return r, nil
}

func (s *fakeStore) act(name string, id int64) (*agentledger.Task, error) {
	s.record("%s %d", name, id)
	return s.find(id)
}

func (s *fakeStore) Replay(_ context.Context, id int64) (*agentledger.Task, error) {
	return s.act("replay", id)
}
func (s *fakeStore) Rerun(_ context.Context, id int64) (*agentledger.Task, error) {
	return s.act("rerun", id)
}

// Unsettled: the fake keeps no journal, so nothing is unsettled.
func (s *fakeStore) Unsettled(_ context.Context, id int64) (*operator.UnsettledError, error) {
	s.record("unsettled %d", id)
	return nil, nil
}

func (s *fakeStore) Cancel(_ context.Context, id int64) (*agentledger.Task, error) {
	return s.act("cancel", id)
}
func (s *fakeStore) Retry(_ context.Context, id int64) (*agentledger.Task, error) {
	return s.act("retry", id)
}
func (s *fakeStore) Compensate(_ context.Context, id int64) (*agentledger.Task, error) {
	return s.act("compensate", id)
}

// CompensationPreview has nothing to undo: the fake keeps no journal.
func (s *fakeStore) CompensationPreview(_ context.Context, id int64) (*UndoPlan, error) {
	s.record("compensation-preview %d", id)
	t, err := s.find(id)
	if err != nil {
		return nil, err
	}
	return &UndoPlan{Task: t}, nil
}

func (s *fakeStore) Resolve(_ context.Context, id int64, step string, r Resolution) (operator.ResolveOutcome, error) {
	t, err := s.act(fmt.Sprintf("resolve %s done=%v note=%q", step, r.Done, r.Note), id)
	return operator.ResolveOutcome{Task: t, Requeued: err == nil && t.State == agentledger.StateNeedsAttention}, err
}

func (s *fakeStore) RetryAll(_ context.Context, f Filter) (operator.BulkResult, error) {
	s.record("retry-all %+v", f)
	return operator.BulkResult{Done: []int64{1}}, nil
}

func (s *fakeStore) CancelAll(_ context.Context, f Filter) (operator.BulkResult, error) {
	s.record("cancel-all %+v", f)
	return operator.BulkResult{Done: []int64{1, 2}}, nil
}

func (s *fakeStore) Workers(context.Context) ([]registry.Worker, error) {
	s.record("workers")
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.workers, nil
}

func (s *fakeStore) Shares(context.Context) ([]operator.Share, error) {
	s.record("shares")
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shares, nil
}

func (s *fakeStore) Limits(context.Context) ([]flow.Limit, error) {
	s.record("limits")
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.limits, nil
}

func (s *fakeStore) Usage(context.Context) ([]flow.Use, error) {
	s.record("usage")
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.usage, nil
}

func (s *fakeStore) Breakers(context.Context) ([]flow.BreakerState, time.Time, error) {
	s.record("breakers")
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.breakers, epoch, nil
}

// PendingApprovals lists the fake's pending requests in the order they
// were added.
func (s *fakeStore) PendingApprovals(_ context.Context, after *approvals.Position, limit int) ([]approvals.Request, int64, error) {
	if after != nil {
		s.record("pending-approvals %d after %d", limit, after.ID)
	} else {
		s.record("pending-approvals %d", limit)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []approvals.Request
	n := int64(0)
	past := after == nil
	for _, r := range s.requests {
		if r.State == approvals.Pending {
			n++
			if past && len(out) < limit {
				out = append(out, r)
			}
			past = past || r.ID == after.ID
		}
	}
	return out, n, nil
}

func (s *fakeStore) Approval(_ context.Context, id int64) (approvals.Request, error) {
	s.record("approval %d", id)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.requests {
		if r.ID == id {
			return r, nil
		}
	}
	return approvals.Request{}, fmt.Errorf("approval request %d: %w", id, agentledger.ErrNotFound)
}

func (s *fakeStore) Decide(_ context.Context, id int64, approve bool, reason string) (approvals.Request, bool, error) {
	s.record("decide %d approve=%v reason=%q", id, approve, reason)
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, r := range s.requests {
		if r.ID != id {
			continue
		}
		if r.State != approvals.Pending {
			return r, false, nil
		}
		at := epoch
		r.State, r.DecidedAt, r.DecidedBy, r.DecidedVia, r.DecisionReason = approvals.Denied, &at, "op", "console", reason
		if approve {
			r.State = approvals.Approved
		}
		s.requests[i] = r
		return r, true, nil
	}
	return approvals.Request{}, false, fmt.Errorf("approval request %d: %w", id, agentledger.ErrNotFound)
}

// Waiting lists the fake's waiting waits in the order they were added.
func (s *fakeStore) Waiting(_ context.Context, after *waits.Position, limit int) ([]Wait, int64, error) {
	if after != nil {
		s.record("waiting %d after %d", limit, after.ID)
	} else {
		s.record("waiting %d", limit)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Wait
	n := int64(0)
	past := after == nil
	for _, w := range s.waits {
		if w.State == waits.Waiting {
			n++
			if past && len(out) < limit {
				out = append(out, w)
			}
			past = past || w.ID == after.ID
		}
	}
	return out, n, nil
}

func (s *fakeStore) Wait(_ context.Context, id int64) (Wait, error) {
	s.record("wait %d", id)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.waits {
		if w.ID == id {
			return w, nil
		}
	}
	return Wait{}, fmt.Errorf("wait %d: %w", id, agentledger.ErrNotFound)
}

// end ends waiting wait id as state, by by; it returns the wait and
// whether it was waiting.
func (s *fakeStore) end(id int64, state, by, reason string, result json.RawMessage) (waits.Wait, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, w := range s.waits {
		if w.ID != id {
			continue
		}
		if w.State != waits.Waiting {
			return w.Wait, false, nil
		}
		at := epoch
		w.State, w.EndedAt, w.EndedBy, w.EndReason, w.Result = state, &at, by, reason, result
		s.waits[i] = w
		return w.Wait, true, nil
	}
	return waits.Wait{}, false, fmt.Errorf("wait %d: %w", id, agentledger.ErrNotFound)
}

func (s *fakeStore) SendSignal(_ context.Context, id int64, payload json.RawMessage) (waits.Sent, error) {
	s.record("send-signal %d payload=%s", id, payload)
	w, ok, err := s.end(id, waits.Done, "signal", "", payload)
	if err != nil {
		return waits.Sent{}, err
	}
	sent := waits.Sent{Signal: waits.Signal{ID: 1, Name: w.Signal, Key: w.Key, Payload: payload, SentBy: "operator:op", State: "consumed"}}
	if ok {
		sent.Woke = &w
	}
	return sent, nil
}

func (s *fakeStore) EndWait(_ context.Context, id int64, reason string) (waits.Wait, bool, error) {
	s.record("end-wait %d reason=%q", id, reason)
	return s.end(id, waits.Ended, "operator:op", reason, nil)
}
