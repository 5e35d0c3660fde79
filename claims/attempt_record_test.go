package claims_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
)

// Every way an attempt ends records who ran it and since when: the
// finishing statements read both from the row they update, so this checks
// that nothing on the way clears them first. A finished task names no
// lease owner.
func TestFinishedAttemptsRecordWorkerAndStart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClock()
	s := pinnedStore(t, c)

	finish := map[string]func(l agentledger.Lease) error{
		"succeeded": func(l agentledger.Lease) error { return s.Succeed(ctx, l, raw(`{}`)) },
		"retry": func(l agentledger.Lease) error {
			_, err := s.Fail(ctx, claims.Failure{Lease: l, Error: "boom", Delay: time.Hour})
			return err
		},
		"dead": func(l agentledger.Lease) error {
			_, err := s.Fail(ctx, claims.Failure{Lease: l, Error: "boom", Final: true})
			return err
		},
		"released":        func(l agentledger.Lease) error { return s.Release(ctx, l) },
		"cancelled":       func(l agentledger.Lease) error { return s.Cancelled(ctx, l, "stop") },
		"needs_attention": func(l agentledger.Lease) error { return s.NeedsAttention(ctx, l, "unknown") },
	}
	for outcome, end := range finish {
		// A queue per outcome: a released task is claimable again.
		task := enqueue(t, s, claims.EnqueueParams{Queue: outcome})
		started := c.Now()
		got, err := s.Claim(ctx, claims.ClaimParams{Queue: outcome, Worker: "worker-" + outcome, Limit: 1, Lease: time.Minute})
		if err != nil || len(got) != 1 || got[0].ID != task.ID {
			t.Fatalf("%s: claim: %v, %d tasks", outcome, err, len(got))
		}
		claimed := got[0]
		c.Advance(3 * time.Second)
		if err := end(claims.LeaseOf(claimed)); err != nil {
			t.Fatalf("%s: %v", outcome, err)
		}
		atts, err := s.Attempts(ctx, task.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(atts) != 1 {
			t.Fatalf("%s: %d attempt records, want 1", outcome, len(atts))
		}
		a := atts[0]
		if string(a.Outcome) != outcome || a.Worker != "worker-"+outcome || !a.StartedAt.Equal(started) ||
			a.EndedAt == nil || !a.EndedAt.Equal(started.Add(3*time.Second)) {
			t.Errorf("%s: attempt record %+v, want worker %q, started %v, ended 3s later", outcome, a, "worker-"+outcome, started)
		}
		if got := get(t, s, task.ID); got.LeaseOwner != "" || got.LeaseExpiresAt != nil {
			t.Errorf("%s: finished task shows lease owner %q, expiry %v", outcome, got.LeaseOwner, got.LeaseExpiresAt)
		}
	}
}
