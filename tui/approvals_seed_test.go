package tui

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentledger/agentledger/approvals"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testenv"
)

// approvalSeed is seedDB's database with two more tasks, each waiting
// for a person's decision as a gate leaves it (its request recorded, the
// task waiting, with no lease, until the decision or the request's
// expiry):
//
//	5  acme/payments/steps  request 1: a charge POSTed to the demo API,
//	                        any approver, asked 5 minutes before epoch
//	6  acme/default/agent   request 2: the model's refund, for U123 or
//	                        the group S456, asked 2 minutes before epoch
//
// Both expire 55 minutes after epoch, an instant long past on the wall
// clock: a test that decides calls extend first.
type approvalSeed struct {
	*seeded
	Approvals *approvals.Store
}

func seedApprovals(t *testing.T) *approvalSeed {
	t.Helper()
	ctx := context.Background()
	s := &approvalSeed{seeded: seedDB(t)}
	s.Approvals = approvals.NewStore(s.DB)
	s.User = "alice" // the console's decisions are hers, whoever runs the tests
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	ask := func(queue, kind string, payload string, r approvals.Request, before time.Duration) {
		t.Helper()
		_, err := s.Claims.Enqueue(ctx, claims.EnqueueParams{Tenant: "acme", Queue: queue, Kind: kind, Payload: json.RawMessage(payload)})
		must(err)
		got, err := s.Claims.Claim(ctx, claims.ClaimParams{Queue: queue, Worker: "worker-d", Limit: 1, Lease: testenv.Lease})
		must(err)
		if len(got) != 1 {
			t.Fatalf("claimed %d tasks of queue %s", len(got), queue)
		}
		task := got[0]
		r.TaskID, r.Generation, r.Tenant = task.ID, task.Generation, task.Tenant
		r, _, err = s.Approvals.Ensure(ctx, r, time.Hour)
		must(err)
		_, err = s.DB.Exec(ctx, `UPDATE approvals SET requested_at = $2::timestamptz - $3 * interval '1 second',
			expires_at = $2::timestamptz + interval '55 minutes' WHERE id = $1`, r.ID, epoch, before.Seconds())
		must(err)
		r, err = s.Approvals.Get(ctx, "", r.ID)
		must(err)
		must(s.Claims.Defer(ctx, claims.Deferral{Lease: claims.LeaseOf(task), Until: r.ExpiresAt, Reason: approvals.Waiting(r), Park: true}))
		_, err = s.DB.Exec(ctx, `UPDATE tasks SET created_at = $2::timestamptz - $3 * interval '1 second',
			updated_at = $2::timestamptz - $3 * interval '1 second' WHERE id = $1`, task.ID, epoch, before.Seconds())
		must(err)
		_, err = s.DB.Exec(ctx, `UPDATE task_attempts SET started_at = $2::timestamptz - $3 * interval '1 second',
			ended_at = $2::timestamptz - $3 * interval '1 second' + interval '1 second' WHERE task_id = $1`, task.ID, epoch, before.Seconds())
		must(err)
	}
	ask("payments", "steps", `{"steps":[{"tool":"http_request","args":{"method":"POST","url":"http://127.0.0.1:7450/demo/charges",
		"body":{"order":77,"amount":100}},"approve":true}]}`,
		approvals.Request{Step: "tool/0", Tool: "http_request", Class: "keyed", Target: "127.0.0.1:7450",
			Call:      json.RawMessage(`{"method":"POST","url":"http://127.0.0.1:7450/demo/charges","body":{"order":77,"amount":100}}`),
			OnTimeout: "deny"}, 5*time.Minute)
	ask("default", "agent", `{"goal":"settle the complaint of order 12","approve":{"refund":{"approvers":["U123","S456"]}}}`,
		approvals.Request{Step: "tool/1/call_7", Tool: "refund", Class: "unsafe",
			Call:      json.RawMessage(`{"order":12,"amount":40,"currency":"EUR"}`),
			Reason:    "The customer was charged twice for order 12; the second charge of 40 EUR should be refunded.",
			Approvers: []string{"U123", "S456"}, OnTimeout: "deny"}, 2*time.Minute)
	return s
}

// extend moves every pending request's expiry an hour past the wall
// clock, so that a decision is not refused as too late.
func (s *approvalSeed) extend(t *testing.T) {
	t.Helper()
	if _, err := s.DB.Exec(context.Background(), `UPDATE approvals SET expires_at = now() + interval '1 hour' WHERE state = 'pending'`); err != nil {
		t.Fatal(err)
	}
}

// pinDecisions sets the instant of every decision to one minute before
// epoch, so that screens showing it do not depend on the wall clock.
func (s *approvalSeed) pinDecisions(t *testing.T) {
	t.Helper()
	if _, err := s.DB.Exec(context.Background(), `UPDATE approvals SET decided_at = $1::timestamptz - interval '1 minute'
		WHERE decided_at IS NOT NULL`, epoch); err != nil {
		t.Fatal(err)
	}
}
