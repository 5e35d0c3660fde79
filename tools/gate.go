package tools

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/flow"
	"github.com/agentledger/agentledger/ledger"
)

// Gate admits calls to targets against the fleet-wide limits and circuit
// breakers (flow.Limiter): a pass to call now, waiting in place for short
// waits, or an agentledger.DeferredError that says what the call waits
// for. hold is the longest the call may take.
//
// It is the one admission interface of a task's effects: the effect
// path's flow stage (Path.Gate) attaches it with Gated to every effect
// that names its target — the HTTP and MCP tools' calls, a defined tool's
// with a Spec.Target — (ledger.Effect.Admit is the moment the
// ledger asks it: only when it performs), and the agent asks it around
// each try of a completion, whose tokens it books. The Slack sink's slack.FleetPacer
// is not a Gate: the outbox dispatcher's posts wait in place for their
// turn on the same limits rather than deferring a task.
type Gate interface {
	Admit(ctx context.Context, target string, hold time.Duration) (*flow.Pass, error)
}

// errNoAnswer marks a request the downstream did not answer in time.
var errNoAnswer = errors.New("no answer")

// Gated returns the Admit and the Perform of an effect on target: Admit
// takes a pass from gate, Perform runs perform and ends the pass with its
// outcome. A call the target did not answer (a timeout, a connection
// error, a 5xx) is a failure for the target's breaker; when that leaves
// the breaker open, a keyed or pure effect (nothing recorded, performed
// again under the same key) waits for the breaker instead of using an
// attempt. Without a gate, perform runs as is.
func Gated(gate Gate, target string, hold time.Duration, class ledger.Class,
	perform func(context.Context, ledger.Call) (ledger.Result, error)) (
	func(context.Context) (func(), error), func(context.Context, ledger.Call) (ledger.Result, error)) {
	if gate == nil {
		return nil, perform
	}
	var pass *flow.Pass // set by Admit, which the ledger calls before Perform
	admit := func(ctx context.Context) (func(), error) {
		p, err := gate.Admit(ctx, target, hold)
		if err != nil {
			return nil, err
		}
		pass = p
		return p.Release, nil
	}
	return admit, func(ctx context.Context, c ledger.Call) (ledger.Result, error) {
		res, err := perform(ctx, c)
		why, failed := unanswered(res, err, hold)
		if !failed {
			pass.Succeeded()
			return res, err
		}
		waits := pass.Failed(why)
		if waits != nil && (class == ledger.Keyed || class == ledger.Pure) {
			var d *agentledger.DeferredError
			if errors.As(waits, &d) {
				d.Reason, d.Performed = fmt.Sprintf("%s; this call: %s", d.Reason, why), true
			}
			return ledger.Result{}, waits
		}
		return res, err
	}
}

// unanswered says whether a call's outcome is one the target's breaker
// counts, and how, in words without secrets: no answer (a timeout or a
// connection error) or a 5xx. Other answers, 4xx included, are answers,
// and so is a permanent error (the call was refused before it went, or
// the target said no).
func unanswered(res ledger.Result, err error, timeout time.Duration) (string, bool) {
	var perm *agentledger.PermanentError
	switch {
	case err == nil:
		return "", false
	case res.Status >= 500:
		return fmt.Sprintf("HTTP %d", res.Status), true
	case res.Status != 0 || errors.As(err, &perm):
		return "", false
	case errors.Is(err, errNoAnswer), errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("no answer within %s", timeout), true
	}
	return "connection error", true
}
