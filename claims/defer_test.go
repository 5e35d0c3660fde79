package claims_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
)

// A deferred attempt queues its task to run at Until without counting the
// attempt, so max_attempts 1 is still enough; the reason shows until the
// next claim, and a stale lease cannot defer.
func TestDeferDoesNotCountTheAttempt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClock()
	s := pinnedStore(t, c)
	task := enqueue(t, s, claims.EnqueueParams{MaxAttempts: 1})
	a := claimOne(t, s, "w", time.Minute)
	until := c.Now().Add(2 * time.Second)
	reason := "http:https://billing.internal:8080: rate limit 1/s, next slot in 2s"
	if err := s.Defer(ctx, claims.Deferral{Lease: claims.LeaseOf(a), Until: until, Reason: reason}); err != nil {
		t.Fatalf("defer: %v", err)
	}
	got := get(t, s, task.ID)
	if got.State != agentledger.StateQueued || got.Attempt != 0 || !got.RunAt.Equal(until) ||
		got.WaitReason != reason || got.LeaseExpiresAt != nil {
		t.Fatalf("after defer: state %s attempt %d run_at %s wait %q lease %v", got.State, got.Attempt, got.RunAt, got.WaitReason, got.LeaseExpiresAt)
	}
	// The stale lease can neither defer nor finish the task again.
	err := s.Defer(ctx, claims.Deferral{Lease: claims.LeaseOf(a), Until: until.Add(time.Hour), Reason: "stale"})
	if !errors.Is(err, agentledger.ErrLeaseLost) {
		t.Fatalf("stale defer: %v, want ErrLeaseLost", err)
	}
	if got := get(t, s, task.ID); got.WaitReason != reason || !got.RunAt.Equal(until) {
		t.Fatalf("stale defer changed the task: run_at %s wait %q", got.RunAt, got.WaitReason)
	}
	claimNone(t, s, "w") // not due yet
	c.Advance(2 * time.Second)
	b := claimOne(t, s, "w", time.Minute)
	if b.Attempt != 1 || b.WaitReason != "" {
		t.Fatalf("claimed again: attempt %d wait %q, want attempt 1 and no reason", b.Attempt, b.WaitReason)
	}
	if err := s.Succeed(ctx, claims.LeaseOf(b), nil); err != nil {
		t.Fatal(err)
	}
	atts, err := s.Attempts(ctx, task.ID)
	if err != nil || len(atts) != 2 {
		t.Fatalf("attempts %+v %v", atts, err)
	}
	if atts[0].Outcome != agentledger.OutcomeDeferred || atts[0].Attempt != 1 || atts[0].Error != reason ||
		atts[1].Outcome != agentledger.OutcomeSucceeded || atts[1].Attempt != 1 {
		t.Fatalf("attempts %+v", atts)
	}
}

func TestDeferNeedsATime(t *testing.T) {
	t.Parallel()
	s := pinnedStore(t, newClock())
	enqueue(t, s, claims.EnqueueParams{})
	a := claimOne(t, s, "w", time.Minute)
	err := s.Defer(context.Background(), claims.Deferral{Lease: claims.LeaseOf(a), Reason: "x"})
	if !errors.Is(err, agentledger.ErrInvalid) {
		t.Fatalf("defer without until: %v", err)
	}
	if got := get(t, s, a.ID); got.State != agentledger.StateRunning {
		t.Fatalf("state %s, want running", got.State)
	}
}

// A cancel requested while the attempt ran is not held up by the wait: the
// deferred task is due at once, and its next claim sees the request.
func TestDeferAfterCancelRequestIsDueAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClock()
	s, op := pinnedWithOperator(t, c)
	task := enqueue(t, s, claims.EnqueueParams{})
	a := claimOne(t, s, "w", time.Minute)
	if _, err := op.Cancel(ctx, "", task.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.Defer(ctx, claims.Deferral{Lease: claims.LeaseOf(a), Until: c.Now().Add(time.Hour), Reason: "x"}); err != nil {
		t.Fatal(err)
	}
	b := claimOne(t, s, "w", time.Minute)
	if b.ID != task.ID || b.CancelRequested == nil {
		t.Fatalf("claimed %+v, want task %d with its cancel request", b, task.ID)
	}
}

// A task that waits through several deferrals in a row has one deferred
// attempt record, for the wait's first; a wait after an attempt that ran
// is recorded again.
func TestDeferRecordsAWaitOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClock()
	s := pinnedStore(t, c)
	task := enqueue(t, s, claims.EnqueueParams{MaxAttempts: 3})
	deferOnce := func(reason string) {
		t.Helper()
		a := claimOne(t, s, "w", time.Minute)
		if err := s.Defer(ctx, claims.Deferral{Lease: claims.LeaseOf(a), Until: c.Now().Add(time.Second), Reason: reason}); err != nil {
			t.Fatal(err)
		}
		c.Advance(time.Second)
	}
	for i := range 5 {
		deferOnce(fmt.Sprintf("mcp:shop: 3 calls in flight, wait %d", i))
	}
	if got := get(t, s, task.ID); got.WaitReason != "mcp:shop: 3 calls in flight, wait 4" {
		t.Fatalf("wait reason %q, want the latest", got.WaitReason)
	}
	a := claimOne(t, s, "w", time.Minute)
	if _, err := s.Fail(ctx, claims.Failure{Lease: claims.LeaseOf(a), Error: "503"}); err != nil {
		t.Fatal(err)
	}
	deferOnce("mcp:shop: circuit open")
	deferOnce("mcp:shop: circuit open")
	atts, err := s.Attempts(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	var outcomes []string
	for _, a := range atts {
		outcomes = append(outcomes, string(a.Outcome)+": "+a.Error)
	}
	want := []string{"deferred: mcp:shop: 3 calls in flight, wait 0", "retry: 503", "deferred: mcp:shop: circuit open"}
	if !slices.Equal(outcomes, want) {
		t.Fatalf("attempt records\n%q\nwant\n%q", outcomes, want)
	}
}

// A deferred attempt that performed an effect before the limit held the
// next is recorded, whatever came before: every claim that acted has its
// record (a steps task paced call by call performs one call a claim).
func TestDeferRecordsAnAttemptThatActed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClock()
	db, s := pinnedDB(t, c)
	task := enqueue(t, s, claims.EnqueueParams{MaxAttempts: 3})
	for i := range 3 {
		a := claimOne(t, s, "w", time.Minute)
		if i > 0 { // the first waits; the others each perform a call first
			// Its journal row, as the ledger writes it for the call.
			if _, err := db.Exec(ctx, `INSERT INTO ledger (tenant, operation, effect_key, request_hash, class, state, task_id,
				generation, step_path, owner_token, performed) VALUES ($1, 'op', $2, '\x00', 'keyed', 'completed', $3, $4, $5, $6, 1)`,
				a.Tenant, fmt.Sprintf("key-%d", i), a.ID, a.Generation, fmt.Sprintf("tool/%d", i), a.LeaseToken); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Defer(ctx, claims.Deferral{Lease: claims.LeaseOf(a), Until: c.Now().Add(time.Second), Reason: "rate limit"}); err != nil {
			t.Fatal(err)
		}
		c.Advance(time.Second)
	}
	atts, err := s.Attempts(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(atts) != 3 {
		t.Fatalf("%d attempt records, want 3: the wait's first, and each claim that performed a call", len(atts))
	}
}

// A deferred attempt that sent a call that failed for now (a breaker's
// probe answered 503: no journal row, yet its key reached the downstream)
// is recorded, whatever came before, as its deferral says.
func TestDeferRecordsAnAttemptThatSentACall(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClock()
	s := pinnedStore(t, c)
	task := enqueue(t, s, claims.EnqueueParams{MaxAttempts: 3})
	for i, sent := range []bool{false, true, false, true} {
		a := claimOne(t, s, "w", time.Minute)
		if err := s.Defer(ctx, claims.Deferral{Lease: claims.LeaseOf(a), Until: c.Now().Add(time.Second),
			Reason: fmt.Sprintf("circuit open %d", i), Performed: sent}); err != nil {
			t.Fatal(err)
		}
		c.Advance(time.Second)
	}
	atts, err := s.Attempts(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for _, a := range atts {
		reasons = append(reasons, a.Error)
	}
	if want := []string{"circuit open 0", "circuit open 1", "circuit open 3"}; !slices.Equal(reasons, want) {
		t.Fatalf("attempt records %q, want %q: the wait's first, and each that sent a call", reasons, want)
	}
}
