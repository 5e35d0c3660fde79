package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agentledger/agentledger/approvals"
	"github.com/agentledger/agentledger/claims"
)

// cmdAsk is the script command
//
//	ask [-approvers A,…] [-timeout D] [-on-timeout approve|deny] [-reason TEXT] ID STEP TOOL CALL
//
// the running task ID reaches a gated effect at STEP, as approvals.Gate
// does: the request (TOOL's call CALL, waiting D, default an hour) is
// recorded and the task deferred until it expires, saying what it waits
// for. It sets $APPROVAL to the request's id.
func cmdAsk(ts *testscript.TestScript, neg bool, args []string) {
	usage := "usage: ask [-approvers A,…] [-timeout D] [-on-timeout approve|deny] [-reason TEXT] ID STEP TOOL CALL"
	r := approvals.Request{Class: "keyed", OnTimeout: "deny"}
	timeout := time.Hour
	for len(args) >= 2 && strings.HasPrefix(args[0], "-") {
		switch args[0] {
		case "-approvers":
			r.Approvers = strings.Split(args[1], ",")
		case "-timeout":
			d, err := time.ParseDuration(args[1])
			if err != nil {
				ts.Fatalf("%s: %v", usage, err)
			}
			timeout = d
		case "-on-timeout":
			r.OnTimeout = args[1]
		case "-reason":
			r.Reason = args[1]
		default:
			ts.Fatalf("%s", usage)
		}
		args = args[2:]
	}
	if neg || len(args) != 4 {
		ts.Fatalf("%s", usage)
	}
	ctx := context.Background()
	pool := scriptPool(ts)
	defer pool.Close()
	s := claims.New(pool)
	t := runningTask(ts, s, args[0])
	r.TaskID, r.Generation, r.Tenant, r.Step, r.Tool, r.Call = t.ID, t.Generation, t.Tenant, args[1], args[2], json.RawMessage(args[3])
	got, _, err := approvals.NewStore(pool).Ensure(ctx, r, timeout)
	ts.Check(err)
	ts.Check(s.Defer(ctx, claims.Deferral{Lease: claims.LeaseOf(t), Until: got.ExpiresAt, Reason: approvals.Waiting(got)}))
	fmt.Fprintf(ts.Stdout(), "task %d waits for approval request %d\n", t.ID, got.ID)
	ts.Setenv("APPROVAL", strconv.FormatInt(got.ID, 10))
}
