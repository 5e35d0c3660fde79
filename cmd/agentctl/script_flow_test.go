package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/flow"
)

// cmdCall makes one call to TARGET through the fleet's limits, as a tool
// does: "call TARGET" succeeds, "call TARGET fail REASON" fails (counted
// against the target's breaker). It prints what happened, and why the
// call waits when it may not pass or a failure opened the breaker.
func cmdCall(ts *testscript.TestScript, neg bool, args []string) {
	if neg || (len(args) != 1 && (len(args) != 3 || args[1] != "fail")) {
		ts.Fatalf("usage: call TARGET [fail REASON]")
	}
	pool := scriptPool(ts)
	defer pool.Close()
	ctx := context.Background()
	target := args[0]
	p, err := flow.NewLimiter(pool, slog.New(slog.NewTextHandler(io.Discard, nil))).Admit(ctx, target, time.Minute)
	var de *agentledger.DeferredError
	if errors.As(err, &de) {
		fmt.Fprintf(ts.Stdout(), "call to %s waits: %s\n", target, de.Reason)
		return
	}
	ts.Check(err)
	if len(args) == 1 {
		p.Succeeded()
		fmt.Fprintf(ts.Stdout(), "call to %s succeeded\n", target)
		return
	}
	if err := p.Failed(args[2]); errors.As(err, &de) {
		fmt.Fprintf(ts.Stdout(), "call to %s failed; calls wait: %s\n", target, de.Reason)
		return
	}
	fmt.Fprintf(ts.Stdout(), "call to %s failed\n", target)
}
