package operator_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testenv"
	"github.com/agentledger/agentledger/operator"
)

// A replay, or the retry of a dead task, runs the generation again from
// attempt 1: the attempts say which run each belongs to, so two "attempt
// 1" rows of one generation are told apart. A retry within a run, and a
// lease lost, continue its run; a re-run starts the next generation's
// first.
func TestAttemptsSayTheirRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := testenv.New(t)
	svc := operator.New(e.DB)
	task := e.Enqueue(claims.EnqueueParams{MaxAttempts: 3})

	fail := func(running *agentledger.Task) {
		t.Helper()
		if _, err := e.Claims.Fail(ctx, claims.Failure{Lease: claims.LeaseOf(running), Error: "boom"}); err != nil {
			t.Fatal(err)
		}
	}
	fail(e.Claim("w")) // run 1, attempt 1: retry
	e.Advance(time.Hour)
	e.Claim("w")
	fail(e.ExpireAndReclaim("w"))                          // attempt 2's lease runs out; attempt 3 fails: dead
	if _, err := svc.Retry(ctx, "", task.ID); err != nil { // run 2
		t.Fatal(err)
	}
	e.Succeed(e.Claim("w"))
	if _, err := svc.Replay(ctx, "", task.ID); err != nil { // run 3
		t.Fatal(err)
	}
	e.Succeed(e.Claim("w"))
	if _, err := svc.Rerun(ctx, "", task.ID); err != nil { // generation 2, run 1
		t.Fatal(err)
	}
	e.Claim("w") // in progress

	var got []string
	for _, a := range attempts(t, svc, task.ID) {
		got = append(got, fmt.Sprintf("g%d r%d a%d %s", a.Generation, a.Run, a.Attempt, a.Outcome))
	}
	want := []string{
		"g1 r1 a1 retry", "g1 r1 a2 lease_expired", "g1 r1 a3 dead",
		"g1 r2 a1 succeeded",
		"g1 r3 a1 succeeded",
		"g2 r1 a1 ",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("attempts:\n%q\nwant\n%q", got, want)
	}
}
