package operator_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/operator"
)

// Operators replaying and re-running a task while workers claim and finish
// it, and cancelling it, get either the task requeued or a conflict ("task
// is running"), never a write that leaves a lease on a task that no longer
// runs.
func TestOperatorsRaceWorkers(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db := testdb.New(t)
	s, op := claims.New(db), operator.New(db)
	r, err := s.Enqueue(ctx, claims.EnqueueParams{Queue: "race", Kind: "noop"})
	if err != nil {
		t.Fatal(err)
	}
	task := r.Task

	var wg sync.WaitGroup
	var ran, requeued, refused, cancels atomic.Int64
	errc := make(chan error, 16)
	report := func(err error) {
		select {
		case errc <- err:
		default:
		}
		cancel()
	}
	for w := range 4 { // workers: claim and succeed as fast as they can
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				got, err := s.Claim(ctx, claims.ClaimParams{Queue: "race", Worker: string(rune('a' + w)), Limit: 1, Lease: time.Minute})
				if err != nil {
					if ctx.Err() == nil {
						report(err)
					}
					return
				}
				for _, g := range got {
					if err := s.Succeed(ctx, claims.LeaseOf(g), nil); err != nil && !errors.Is(err, agentledger.ErrLeaseLost) && ctx.Err() == nil {
						report(err)
						return
					}
					ran.Add(1)
				}
			}
		}()
	}
	for o := range 4 { // operators: replay and re-run in turn
		wg.Add(1)
		go func() {
			defer wg.Done()
			requeue := func() error { _, err := op.Replay(ctx, "", task.ID); return err }
			if o%2 == 1 {
				requeue = func() error { _, err := op.Rerun(ctx, "", task.ID); return err }
			}
			for ctx.Err() == nil && requeued.Load() < 300 {
				err := requeue()
				switch {
				case err == nil:
					requeued.Add(1)
				case errors.Is(err, agentledger.ErrConflict):
					if !strings.Contains(err.Error(), "is queued") && !strings.Contains(err.Error(), "is running") {
						report(fmt.Errorf("refused for the wrong reason: %w", err))
						return
					}
					refused.Add(1)
				case ctx.Err() != nil:
					return
				default:
					report(err)
					return
				}
			}
			cancel()
		}()
	}
	wg.Add(1)
	go func() { // an operator cancelling now and then
		defer wg.Done()
		for ctx.Err() == nil {
			_, err := op.Cancel(ctx, "", task.ID)
			switch {
			case err == nil:
				cancels.Add(1)
			case errors.Is(err, agentledger.ErrConflict):
			case ctx.Err() != nil:
				return
			default:
				report(err)
				return
			}
			if got, err := s.Get(ctx, "", task.ID); err == nil && got.State == agentledger.StateRunning && got.LeaseExpiresAt == nil {
				report(fmt.Errorf("task running without a lease"))
				return
			}
		}
	}()
	wg.Wait()
	select {
	case err := <-errc:
		t.Fatalf("after %d runs, %d requeues, %d refusals: %v", ran.Load(), requeued.Load(), refused.Load(), err)
	default:
	}
	t.Logf("%d runs, %d requeues, %d refusals, %d cancels", ran.Load(), requeued.Load(), refused.Load(), cancels.Load())
}
