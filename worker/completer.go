package worker

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/dbaway"
)

// maxCompletionBatch caps one completion statement.
const maxCompletionBatch = 1000

// enoughToWrite is the batch size from which the completer writes what it
// has without waiting for more.
const enoughToWrite = 100

// completion is one attempt's outcome waiting to be written. done receives
// the new state, or "" when the lease was lost, or an error.
type completion struct {
	success *claims.Success
	failure *claims.Failure
	done    chan completionResult
}

type completionResult struct {
	state agentledger.TaskState
	err   error
}

// completer writes outcomes in batches: given one, it takes whatever else
// arrives within wait (or until the batch is full), so many outcomes share
// one statement and one commit (group commit) at low load as under high.
// Each write is fenced per lease.
type completer struct {
	store *claims.Store
	in    chan *completion
	wait  time.Duration
	// wrote are told (without blocking) after each batch is written, one
	// per claiming loop (onWrite): a tenant's cap has room again only once
	// its tasks' ends commit.
	mu    sync.Mutex
	wrote []chan struct{}
	log   *slog.Logger
}

func newCompleter(store *claims.Store, wait time.Duration, log *slog.Logger) *completer {
	return &completer{store: store, in: make(chan *completion, maxCompletionBatch), wait: wait, log: log}
}

// complete queues cm, calls queued once the completer has taken it (its
// bounded queue is the backpressure on claiming), and waits until it is
// written or ctx is done.
func (c *completer) complete(ctx context.Context, cm *completion, queued func()) completionResult {
	cm.done = make(chan completionResult, 1)
	select {
	case c.in <- cm:
		queued()
	case <-ctx.Done():
		return completionResult{err: ctx.Err()}
	}
	select {
	case r := <-cm.done:
		return r
	case <-ctx.Done():
		return completionResult{err: ctx.Err()}
	}
}

// run writes batches until ctx is done.
func (c *completer) run(ctx context.Context) {
	for {
		var first *completion
		select {
		case <-ctx.Done():
			return
		case first = <-c.in:
		}
		c.flush(ctx, c.gather(ctx, first))
		c.mu.Lock()
		for _, w := range c.wrote {
			select {
			case w <- struct{}{}:
			default:
			}
		}
		c.mu.Unlock()
	}
}

// onWrite returns a channel told after each batch written from now on.
func (c *completer) onWrite() <-chan struct{} {
	w := make(chan struct{}, 1)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wrote = append(c.wrote, w)
	return w
}

// gather returns first and the outcomes that arrive within c.wait after it
// (all that are waiting already when c.wait is not positive, or once
// enoughToWrite have come), up to a full batch; it returns early when ctx
// is done.
func (c *completer) gather(ctx context.Context, first *completion) []*completion {
	batch := []*completion{first}
	var deadline <-chan time.Time
	if c.wait > 0 {
		t := time.NewTimer(c.wait)
		defer t.Stop()
		deadline = t.C
	}
	for len(batch) < maxCompletionBatch {
		select {
		case cm := <-c.in:
			batch = append(batch, cm)
			continue
		default:
		}
		// Waiting pays only while batches are small: a batch that is
		// already large when the queue runs dry shares its statement well
		// enough, and waiting would idle the completer under load.
		if deadline == nil || len(batch) >= enoughToWrite {
			break
		}
		select {
		case cm := <-c.in:
			batch = append(batch, cm)
		case <-deadline:
			return batch
		case <-ctx.Done():
			return batch
		}
	}
	return batch
}

// writeTimeout bounds one batch's statements; its waiters get the error.
const writeTimeout = 30 * time.Second

func (c *completer) flush(ctx context.Context, batch []*completion) {
	ctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	var ok []*completion
	var failed []*completion
	for _, cm := range batch {
		if cm.success != nil {
			ok = append(ok, cm)
		} else {
			failed = append(failed, cm)
		}
	}
	c.write(ctx, ok, c.succeed)
	c.write(ctx, failed, c.fail)
}

// write records a group in one statement; if the statement fails, each
// completion is tried alone, so that one unstorable outcome cannot fail
// the others with it.
func (c *completer) write(ctx context.Context, group []*completion, stmt func(context.Context, []*completion) error) {
	if len(group) == 0 {
		return
	}
	rest, err := c.settle(ctx, group, stmt)
	if err == nil {
		return
	}
	if len(rest) == 1 || uncertain(err) { // the database stayed away past writeTimeout
		answer(rest, err)
		return
	}
	for _, cm := range rest {
		if one, err := c.settle(ctx, []*completion{cm}, stmt); err != nil {
			answer(one, err)
		}
	}
}

// settle runs stmt for group. When it fails uncertainly (the connection
// cut, a failover: the commit may or may not have happened), it waits for
// the database, reads back what each lease's attempt became, answers
// those that ended, and sends the others again: the write is fenced, so
// sending it again cannot undo another worker's claim. It returns the
// completions still unanswered, with the last error.
func (c *completer) settle(ctx context.Context, group []*completion, stmt func(context.Context, []*completion) error) ([]*completion, error) {
	err := stmt(ctx, group)
	for attempt := int32(1); err != nil && uncertain(err); attempt++ {
		if !dbaway.Backoff.Wait(ctx, attempt) {
			return group, err
		}
		leases := make([]agentledger.Lease, len(group))
		for i, cm := range group {
			leases[i] = cm.lease()
		}
		ended, rerr := c.store.AttemptOutcomes(ctx, leases)
		if rerr != nil {
			continue // still away: err stands
		}
		var open []*completion
		for _, cm := range group {
			if o, ok := ended[cm.lease()]; ok {
				cm.done <- completionResult{state: cm.endedAs(o)}
			} else {
				open = append(open, cm)
			}
		}
		c.log.Info("outcomes whose write went unanswered read back", "ended", len(group)-len(open), "sent_again", len(open), "err", err)
		if group = open; len(group) == 0 {
			return nil, nil
		}
		err = stmt(ctx, group)
	}
	return group, err
}

func answer(group []*completion, err error) {
	for _, cm := range group {
		cm.done <- completionResult{err: err}
	}
}

func (cm *completion) lease() agentledger.Lease {
	if cm.success != nil {
		return cm.success.Lease
	}
	return cm.failure.Lease
}

// endedAs is the state an attempt that ended with outcome o left its task
// in, as the write of cm would have reported it: "" when the lease was lost
// (the attempt expired or was released, or another outcome than this
// write's was recorded).
func (cm *completion) endedAs(o agentledger.AttemptOutcome) agentledger.TaskState {
	switch {
	case o == agentledger.OutcomeReleased || o == agentledger.OutcomeLeaseExpired || o == agentledger.OutcomeDeferred:
		return ""
	case cm.success != nil && o == agentledger.OutcomeSucceeded:
		return agentledger.StateSucceeded
	case cm.success != nil || o == agentledger.OutcomeSucceeded:
		return ""
	case o == agentledger.OutcomeRetry:
		return agentledger.StateRetrying
	}
	return agentledger.TaskState(o)
}

// succeed writes successes and answers every waiter, unless the statement
// failed (write tries again, or answers with the error).
func (c *completer) succeed(ctx context.Context, group []*completion) error {
	done := make([]claims.Success, len(group))
	for i, cm := range group {
		done[i] = *cm.success
	}
	lost, err := c.store.SucceedMany(ctx, done)
	if err != nil {
		return err
	}
	lostSet := leaseSet(lost)
	for _, cm := range group {
		r := completionResult{state: agentledger.StateSucceeded}
		if lostSet[cm.success.Lease] {
			r.state = ""
		}
		cm.done <- r
	}
	return nil
}

// fail writes failures; see succeed.
func (c *completer) fail(ctx context.Context, group []*completion) error {
	fs := make([]claims.Failure, len(group))
	for i, cm := range group {
		fs[i] = *cm.failure
	}
	states, _, err := c.store.FailMany(ctx, fs)
	if err != nil {
		return err
	}
	for _, cm := range group {
		cm.done <- completionResult{state: states[cm.failure.Lease.TaskID]}
	}
	return nil
}

func leaseSet(ls []agentledger.Lease) map[agentledger.Lease]bool {
	m := make(map[agentledger.Lease]bool, len(ls))
	for _, l := range ls {
		m[l] = true
	}
	return m
}
