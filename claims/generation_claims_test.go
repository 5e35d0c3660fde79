package claims_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentledger/agentledger/claims"
)

// A task counts its claims in its current generation: the first claim of a
// generation is the only one that can know the ledger holds nothing of it.
// A retry after a failure, a deferral and a replay keep counting; a re-run
// (a new generation) starts again.
func TestGenerationClaims(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClock()
	s, op := pinnedWithOperator(t, c)
	enqueue(t, s, claims.EnqueueParams{})
	first := claimOne(t, s, "w", time.Minute)
	if first.GenerationClaims != 1 || !first.FirstClaim() {
		t.Fatalf("first claim: %d claims", first.GenerationClaims)
	}
	if _, err := s.Fail(ctx, claims.Failure{Lease: claims.LeaseOf(first), Error: "boom"}); err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Hour)
	retried := claimOne(t, s, "w", time.Minute)
	if retried.GenerationClaims != 2 || retried.FirstClaim() {
		t.Fatalf("claim after a failure: %d claims, want 2", retried.GenerationClaims)
	}
	if err := s.Defer(ctx, claims.Deferral{Lease: claims.LeaseOf(retried), Reason: "a limit", Until: c.Now()}); err != nil {
		t.Fatal(err)
	}
	deferred := claimOne(t, s, "w", time.Minute)
	if deferred.GenerationClaims != 3 || deferred.Attempt != retried.Attempt {
		t.Fatalf("claim after a deferral: %d claims (attempt %d), want 3 with the attempt given back", deferred.GenerationClaims, deferred.Attempt)
	}
	if err := s.Succeed(ctx, claims.LeaseOf(deferred), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := op.Replay(ctx, "", first.ID); err != nil {
		t.Fatal(err)
	}
	replayed := claimOne(t, s, "w", time.Minute)
	if replayed.GenerationClaims != 4 || replayed.Attempt != 1 || replayed.FirstClaim() {
		t.Fatalf("replay: %d claims, attempt %d; want 4, 1", replayed.GenerationClaims, replayed.Attempt)
	}
	if err := s.Succeed(ctx, claims.LeaseOf(replayed), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := op.Rerun(ctx, "", first.ID); err != nil {
		t.Fatal(err)
	}
	rerun := claimOne(t, s, "w", time.Minute)
	if rerun.GenerationClaims != 1 || rerun.Generation != first.Generation+1 || !rerun.FirstClaim() {
		t.Fatalf("re-run: %d claims in generation %d; want the first claim of a new generation", rerun.GenerationClaims, rerun.Generation)
	}
	if got := get(t, s, first.ID); got.GenerationClaims != 1 {
		t.Fatalf("read back: %d claims", got.GenerationClaims)
	}
}
