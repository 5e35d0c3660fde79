package worker

import (
	"context"
	"log/slog"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
)

// maxCompletionBatch caps one completion statement.
const maxCompletionBatch = 1000

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

// completer writes outcomes in batches: it takes whatever is waiting when it
// is free, so at low load each outcome is written at once and under load
// many share one statement (group commit). Each write is fenced per lease.
type completer struct {
	store *claims.Store
	in    chan *completion
	log   *slog.Logger
}

func newCompleter(store *claims.Store, log *slog.Logger) *completer {
	return &completer{store: store, in: make(chan *completion, maxCompletionBatch), log: log}
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
		batch := []*completion{first}
	drain:
		for len(batch) < maxCompletionBatch {
			select {
			case cm := <-c.in:
				batch = append(batch, cm)
			default:
				break drain
			}
		}
		c.flush(ctx, batch)
	}
}

func (c *completer) flush(ctx context.Context, batch []*completion) {
	var ok []claims.Success
	var failed []claims.Failure
	var okc, failc []*completion
	for _, cm := range batch {
		if cm.success != nil {
			ok = append(ok, *cm.success)
			okc = append(okc, cm)
		} else {
			failed = append(failed, *cm.failure)
			failc = append(failc, cm)
		}
	}
	if len(ok) > 0 {
		lost, err := c.store.SucceedMany(ctx, ok)
		lostSet := leaseSet(lost)
		for _, cm := range okc {
			r := completionResult{state: agentledger.StateSucceeded, err: err}
			if lostSet[cm.success.Lease] {
				r.state = ""
			}
			cm.done <- r
		}
	}
	if len(failed) > 0 {
		states, _, err := c.store.FailMany(ctx, failed)
		for _, cm := range failc {
			cm.done <- completionResult{state: states[cm.failure.Lease.TaskID], err: err}
		}
	}
}

func leaseSet(ls []agentledger.Lease) map[agentledger.Lease]bool {
	m := make(map[agentledger.Lease]bool, len(ls))
	for _, l := range ls {
		m[l] = true
	}
	return m
}
