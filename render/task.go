package render

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/operator"
)

// AttemptOf is a task's attempt out of its most: "2 of 5".
func AttemptOf(t *agentledger.Task) string { return fmt.Sprintf("%d of %d", t.Attempt, t.MaxAttempts) }

// Tries is AttemptOf for a narrow column: "2/5".
func Tries(t *agentledger.Task) string { return fmt.Sprintf("%d/%d", t.Attempt, t.MaxAttempts) }

// Waiting is why a queued (or retrying) task waits, or "" when it does
// not: a limit it waits for, or what no live daemon has
// (registry.ExplainWaits).
func Waiting(t *agentledger.Task) string {
	switch t.State {
	case agentledger.StateQueued, agentledger.StateRetrying, agentledger.StateWaiting:
		return t.WaitReason
	case agentledger.StateRunning: // its worker gone, as registry.ExplainWaits says
		if t.LeaseExpiresAt != nil && t.LeaseExpiresAt.Before(time.Now()) {
			return t.WaitReason
		}
	}
	return ""
}

// AttemptOutcome is an attempt's outcome, or "in progress" until it ends.
func AttemptOutcome(a agentledger.Attempt) string {
	if a.EndedAt == nil {
		return "in progress"
	}
	return string(a.Outcome)
}

// AttemptNumber is an attempt's number, in parentheses for a deferral:
// a deferred attempt is not counted, so the claim after it takes the same
// number.
func AttemptNumber(a agentledger.Attempt) string {
	if a.Outcome == agentledger.OutcomeDeferred {
		return "(" + strconv.Itoa(int(a.Attempt)) + ")"
	}
	return strconv.Itoa(int(a.Attempt))
}

// AnyDeferred reports whether atts hold a deferral, whose number the
// attempts' legends then explain (AttemptNumber).
func AnyDeferred(atts []agentledger.Attempt) bool {
	return slices.ContainsFunc(atts, func(a agentledger.Attempt) bool { return a.Outcome == agentledger.OutcomeDeferred })
}

// NotificationSource is what asked for a notification event: its rule
// ("ops (edit only)" for a state the rule does not ask for, which only
// edits its message), or for a message of the notify tool its step.
func NotificationSource(n operator.Notification) string {
	switch {
	case n.Rule != "" && n.UpdateOnly:
		return n.Rule + " (edit only)"
	case n.Rule != "":
		return n.Rule
	}
	return n.Step
}

// Claimable follows an expired lease's Expiry: a worker that can run the
// task may claim it (Waiting says when no live one can).
const Claimable = ", claimable by a worker that can run it"

// Lease is a task's lease in words, for each reader to lay out and style.
type Lease struct {
	// None is set when no worker holds the task: "none", or "none (last
	// fencing token 7)".
	None  string
	Owner string
	Token int64
	// Expiry is "expires in 20s", or once Expired "expired 3s ago".
	Expiry  string
	Expired bool
}

// LeaseOf is t's lease at now.
func LeaseOf(t *agentledger.Task, now time.Time) Lease {
	if t.State != agentledger.StateRunning || t.LeaseExpiresAt == nil {
		if t.LeaseToken > 0 {
			return Lease{None: fmt.Sprintf("none (last fencing token %d)", t.LeaseToken)}
		}
		return Lease{None: "none"}
	}
	l := Lease{Owner: t.LeaseOwner, Token: t.LeaseToken, Expiry: "expires " + Relative(*t.LeaseExpiresAt, now)}
	if !t.LeaseExpiresAt.After(now) {
		l.Expiry, l.Expired = "expired "+Relative(*t.LeaseExpiresAt, now), true
	}
	return l
}
