package claims_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/syncrep"
)

// A task whose insert other sessions see but no synchronous standby has —
// its commit's wait for the standby was cut short, as a primary's shutdown
// at a switchover cuts it, and its submitter got an error — must not run
// until the standby has it. Run before, its effects go out for a task a
// failover then loses: the submitter's retry on the new primary makes
// another task, with another id and so other effect keys, and the effects
// go out again. A claim waits for the standby as any commit does, and one
// whose wait is terminated, cancelled (it then commits locally, and says
// so only in a warning) or runs past its deadline starts no task. Nor is
// the submitter's retry under its key acknowledged before the standby has
// the task it finds.
//
// The server here has a synchronous standby that never comes
// (synchronous_standby_names names one): every commit that waits, waits
// until the test ends the wait (package syncrep). Claims run on a
// connection of their own, as a worker's do, from a pool that hears the
// server's notices as agentd's (database.Open).
func TestAClaimWaitsForTheStandbyToHaveItsTask(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, admin := syncrep.Server(t)
	submitter := syncrep.Open(t, url, "submitter")

	// Each case has its queue, and in it a task whose insert is visible
	// and on no standby.
	unreplicated := func(queue string) {
		t.Helper()
		var err error
		returned := make(chan struct{})
		go func() {
			defer close(returned)
			_, err = claims.New(submitter).Enqueue(ctx, claims.EnqueueParams{Kind: "noop", Queue: queue, SubmissionKey: queue})
		}()
		pid := syncrep.Waiting(t, admin, "submitter", returned)
		if pid == 0 {
			t.Fatalf("the enqueue into %s returned (%v) without waiting for the standby", queue, err)
		}
		syncrep.End(t, admin, "pg_terminate_backend", pid) // as a fast shutdown ends its backends
		<-returned
		if err == nil {
			t.Fatalf("the enqueue into %s was acknowledged though its wait for the standby was cut short", queue)
		}
		var n int
		if err := admin.QueryRow(ctx, `SELECT count(*) FROM tasks WHERE queue = $1 AND state = 'queued'`, queue).Scan(&n); err != nil || n != 1 {
			t.Fatalf("%s holds %d queued tasks (%v); want the one committed locally", queue, n, err)
		}
	}

	for _, c := range []struct {
		name     string
		dueOnly  bool
		end      string        // how the wait is ended: pg_terminate_backend or pg_cancel_backend
		deadline time.Duration // or, when set, by the claim's deadline
	}{
		{"a due-only claim, its wait terminated", true, "pg_terminate_backend", 0},
		{"a full claim, its wait terminated", false, "pg_terminate_backend", 0},
		{"a due-only claim, its wait cancelled", true, "pg_cancel_backend", 0},
		{"a due-only claim past its deadline", true, "", 300 * time.Millisecond},
	} {
		queue := "q" + time.Now().Format("150405.000000")
		unreplicated(queue)
		claimer := syncrep.Open(t, url, "claimer")
		conn, err := claimer.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		cctx, cancel := context.WithCancel(ctx)
		if c.deadline > 0 {
			cctx, cancel = context.WithTimeout(ctx, c.deadline)
		}
		var got []*agentledger.Task
		returned := make(chan struct{})
		go func() {
			defer close(returned)
			got, err = claims.New(conn).Claim(cctx, claims.ClaimParams{Queue: queue, Worker: "w", Limit: 10,
				Lease: time.Minute, DueOnly: c.dueOnly, Hint: &claims.ClaimHint{}})
		}()
		if pid := syncrep.Waiting(t, admin, "claimer", returned); pid == 0 {
			cancel()
			t.Fatalf("%s returned %d tasks (%v) without waiting for the standby to have them: "+
				"a failover could lose the task after its effects went out", c.name, len(got), err)
		} else if c.deadline == 0 {
			syncrep.End(t, admin, c.end, pid)
		}
		<-returned
		cancel()
		conn.Release()
		if err == nil || len(got) > 0 {
			t.Errorf("%s: %d tasks, err %v; want none and an error", c.name, len(got), err)
		}
		if c.end == "pg_cancel_backend" && !errors.As(err, new(*claims.UnreplicatedError)) {
			t.Errorf("%s: %v, want an UnreplicatedError", c.name, err)
		}

		// The submitter's retry under its key finds the task, and waits
		// for the standby to have it before it says so.
		var dupErr error
		again := make(chan struct{})
		go func() {
			defer close(again)
			_, dupErr = claims.New(submitter).Enqueue(ctx, claims.EnqueueParams{Kind: "noop", Queue: queue, SubmissionKey: queue})
		}()
		if pid := syncrep.Waiting(t, admin, "submitter", again); pid == 0 {
			t.Fatalf("the retry of %s's submission was answered (%v) without waiting for the standby", queue, dupErr)
		} else {
			syncrep.End(t, admin, "pg_terminate_backend", pid)
		}
		<-again
		if dupErr == nil {
			t.Errorf("the retry of %s's submission was acknowledged though its wait for the standby was cut short", queue)
		}
	}

	// An enqueue that leases its task to an idle pool of this process
	// (EnqueueStart) starts it only once its insert is acknowledged, and
	// not when its wait was cancelled: then the task waits out its lease.
	for _, end := range []string{"pg_terminate_backend", "pg_cancel_backend"} {
		st := &fakeStarter{}
		var err error
		returned := make(chan struct{})
		go func() {
			defer close(returned)
			_, err = claims.New(submitter).EnqueueStart(ctx, claims.EnqueueParams{Kind: "noop", Queue: "eager-" + end}, st)
		}()
		if pid := syncrep.Waiting(t, admin, "submitter", returned); pid == 0 {
			t.Fatalf("the starting enqueue returned (%v) without waiting for the standby", err)
		} else {
			syncrep.End(t, admin, end, pid)
		}
		<-returned
		if asked, started, released := st.counts(); asked != 1 || started != 0 || released != 1 {
			t.Errorf("a starting enqueue whose wait for the standby was ended by %s: err %v, asked %d, started %d, released %d; "+
				"want its slot given back, the task not started", end, err, asked, started, released)
		}
	}
}
