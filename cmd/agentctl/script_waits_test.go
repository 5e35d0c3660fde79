package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/waits"
)

// cmdAwait is the script command
//
//	await [-timeout D] ID STEP (signal NAME KEY | timer)
//
// the running task ID reaches a wait at STEP, as the wait tools do: the
// wait (for signal NAME with key KEY, or a timer, of D, default an hour)
// is recorded and the task parked until its deadline, saying what it
// waits for. It sets $WAIT to the wait's id.
func cmdAwait(ts *testscript.TestScript, neg bool, args []string) {
	usage := "usage: await [-timeout D] ID STEP (signal NAME KEY | timer)"
	timeout := time.Hour
	if len(args) >= 2 && args[0] == "-timeout" {
		d, err := time.ParseDuration(args[1])
		if err != nil {
			ts.Fatalf("%s: %v", usage, err)
		}
		timeout, args = d, args[2:]
	}
	if neg || len(args) < 3 {
		ts.Fatalf("%s", usage)
	}
	ctx := context.Background()
	pool := scriptPool(ts)
	defer pool.Close()
	s := claims.New(pool)
	t := runningTask(ts, s, args[0])
	w := waits.Wait{TaskID: t.ID, Generation: t.Generation, Step: args[1], Tenant: t.Tenant, Kind: args[2]}
	switch {
	case w.Kind == waits.KindSignal && len(args) == 5:
		w.Signal, w.Key = args[3], args[4]
	case w.Kind == waits.KindTimer && len(args) == 3:
	default:
		ts.Fatalf("%s", usage)
	}
	got, err := waits.NewStore(pool).Await(ctx, w, nil, timeout)
	ts.Check(err)
	if got.State != waits.Waiting {
		ts.Fatalf("wait %d is %s at once", got.ID, got.State)
	}
	ts.Check(s.Defer(ctx, claims.Deferral{Lease: claims.LeaseOf(t), Until: got.Deadline, Reason: waits.Describe(got), Park: true}))
	fmt.Fprintf(ts.Stdout(), "task %d %s\n", t.ID, waits.Describe(got))
	ts.Setenv("WAIT", strconv.FormatInt(got.ID, 10))
}
