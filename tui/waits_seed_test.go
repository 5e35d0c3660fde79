package tui

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testenv"
	"github.com/agentledger/agentledger/waits"
)

// waitSeed is seedDB's database with three more tasks, each waiting as
// a wait tool leaves it (its wait recorded, the task parked waiting, with
// no lease, until what it waits for comes or its deadline), and the two
// children of the last:
//
//	5  acme/payments/steps  wait 1: signal payment.settled key order-7,
//	                        from 5 minutes before epoch, for an hour
//	6  acme/timers/steps    wait 2: a timer due 10 minutes after epoch,
//	                        from 2 minutes before it
//	7  beta/fanout/agent    wait 3: its children 8 and 9, all of them, a
//	                        failure failing it, from a minute before
//	                        epoch, for a day
//	8  beta/kids/echo       7's child, succeeded
//	9  beta/kids/echo       7's child, queued
//
// The deadlines are instants long past on the wall clock: a test that
// sends a signal calls extend first.
type waitSeed struct{ *seeded }

func seedWaits(t *testing.T) *waitSeed {
	t.Helper()
	ctx := context.Background()
	s := &waitSeed{seeded: seedDB(t)}
	s.User = "alice" // the console's signals and ends are hers, whoever runs the tests
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	enqueue := func(tenant, queue, kind, payload string) int64 {
		t.Helper()
		r, err := s.Claims.Enqueue(ctx, claims.EnqueueParams{Tenant: tenant, Queue: queue, Kind: kind, Payload: json.RawMessage(payload)})
		must(err)
		return r.Task.ID
	}
	claim := func(queue string) *agentledger.Task {
		t.Helper()
		got, err := s.Claims.Claim(ctx, claims.ClaimParams{Queue: queue, Worker: "worker-d", Limit: 1, Lease: testenv.Lease})
		must(err)
		if len(got) != 1 {
			t.Fatalf("claimed %d tasks of queue %s", len(got), queue)
		}
		return got[0]
	}
	// park records w for task as its tool would, pins its instants (begun
	// before epoch, its deadline after it) and parks the task on it.
	park := func(task *agentledger.Task, w waits.Wait, until *time.Time, timeout time.Duration, before, deadline time.Duration) {
		t.Helper()
		w.TaskID, w.Generation, w.Tenant = task.ID, task.Generation, task.Tenant
		got, err := s.Waits.Await(ctx, w, until, timeout)
		must(err)
		if got.State != waits.Waiting {
			t.Fatalf("wait of task %d: %s", task.ID, got.State)
		}
		_, err = s.DB.Exec(ctx, `UPDATE waits SET created_at = $2::timestamptz - $3 * interval '1 second',
			deadline = $2::timestamptz + $4 * interval '1 second' WHERE id = $1`, got.ID, epoch, before.Seconds(), deadline.Seconds())
		must(err)
		got, err = s.Waits.Get(ctx, "", got.ID)
		must(err)
		must(s.Claims.Defer(ctx, claims.Deferral{Lease: claims.LeaseOf(task), Until: got.Deadline, Reason: waits.Describe(got), Park: true}))
		_, err = s.DB.Exec(ctx, `UPDATE tasks SET created_at = $2::timestamptz - $3 * interval '1 second',
			updated_at = $2::timestamptz - $3 * interval '1 second' WHERE id = $1`, task.ID, epoch, before.Seconds())
		must(err)
		_, err = s.DB.Exec(ctx, `UPDATE task_attempts SET started_at = $2::timestamptz - $3 * interval '1 second',
			ended_at = $2::timestamptz - $3 * interval '1 second' + interval '1 second' WHERE task_id = $1`, task.ID, epoch, before.Seconds())
		must(err)
	}

	// 5: a payment callback.
	enqueue("acme", "payments", "steps", `{"steps":[{"tool":"wait_for_signal","args":{"signal":"payment.settled","key":"order-7","timeout":"1h"}}]}`)
	park(claim("payments"), waits.Wait{Step: "tool/0", Kind: waits.KindSignal, Signal: "payment.settled", Key: "order-7"},
		nil, time.Hour, 5*time.Minute, 55*time.Minute)

	// 6: a durable sleep.
	enqueue("acme", "timers", "steps", `{"steps":[{"tool":"wait_timer","args":{"for":"12m"}}]}`)
	due := time.Now().Add(12 * time.Minute)
	park(claim("timers"), waits.Wait{Step: "tool/0", Kind: waits.KindTimer}, &due, 0, 2*time.Minute, 10*time.Minute)

	// 7: a parent that started two children, one of which ended. They
	// become its children once 8 has ended, as create_task would have
	// linked them, so that 8's end does not wake 7 before it waits.
	enqueue("beta", "fanout", "agent", `{"goal":"restock the three warehouses"}`)
	kid := enqueue("beta", "kids", "echo", `{"warehouse":"north"}`)
	enqueue("beta", "kids", "echo", `{"warehouse":"south"}`)
	must(s.Claims.Succeed(ctx, claims.LeaseOf(claim("kids")), json.RawMessage(`{"restocked":true}`)))
	kids := []int64{kid, kid + 1}
	_, err := s.DB.Exec(ctx, `UPDATE tasks SET parent_id = $2, parent_generation = 1 WHERE id = ANY ($1)`, kids, kid-1)
	must(err)
	_, err = s.DB.Exec(ctx, `UPDATE tasks SET created_at = $2::timestamptz - interval '3 minutes', run_at = $2::timestamptz - interval '3 minutes',
		updated_at = $2::timestamptz - interval '90 seconds',
		finished_at = CASE WHEN finished_at IS NULL THEN NULL ELSE $2::timestamptz - interval '90 seconds' END WHERE id = ANY ($1)`, kids, epoch)
	must(err)
	_, err = s.DB.Exec(ctx, `UPDATE task_attempts SET started_at = $2::timestamptz - interval '100 seconds',
		ended_at = $2::timestamptz - interval '90 seconds' WHERE task_id = $1`, kid, epoch)
	must(err)
	spec, err := json.Marshal(waits.ChildrenSpec{Mode: "all", OnFailure: "fail"})
	must(err)
	park(claim("fanout"), waits.Wait{Step: "tool/2/call_1", Kind: waits.KindChildren, Spec: spec},
		nil, 24*time.Hour, time.Minute, 24*time.Hour-time.Minute)
	return s
}

// extend moves every waiting wait's deadline, and its task's, as far
// past the wall clock as it was past epoch, so that a signal finds its
// wait before it times out.
func (s *waitSeed) extend(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.DB.Exec(ctx, `UPDATE waits SET deadline = now() + (deadline - $1::timestamptz) WHERE state = 'waiting'`, epoch); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB.Exec(ctx, `UPDATE tasks t SET run_at = w.deadline FROM waits w WHERE w.task_id = t.id AND w.state = 'waiting'`); err != nil {
		t.Fatal(err)
	}
}

// pinEnds sets the instant every ended wait ended to one minute before
// epoch, so that screens showing it do not depend on the wall clock.
func (s *waitSeed) pinEnds(t *testing.T) {
	t.Helper()
	if _, err := s.DB.Exec(context.Background(), `UPDATE waits SET ended_at = $1::timestamptz - interval '1 minute'
		WHERE ended_at IS NOT NULL`, epoch); err != nil {
		t.Fatal(err)
	}
}
