package agentledger

import (
	"fmt"
	"strings"
	"time"
)

// DeferredError says an attempt did nothing outside and waits for capacity
// (a fleet-wide rate limit): the worker queues its task again to run at
// Until without counting the attempt, and shows Reason meanwhile. Test for
// it with errors.As; packages wrap it with context, never replace it.
type DeferredError struct {
	// Until is when the task may run again.
	Until time.Time
	// Target is what it waits for, "<kind>:<name>" as package flow
	// writes it ("http:https://billing.internal:8080").
	Target string
	// Reason says why it waits, for operators; never a secret.
	Reason string
	// Park parks the task as waiting instead of queued: it waits for
	// something that wakes it (a person's decision), not for a time, and
	// no claim reads it meanwhile; Until is then its deadline, when it is
	// queued again whatever happened.
	Park bool
	// Performed says the attempt sent a call before it deferred (a call the
	// downstream did not answer, whose failure opened or kept open its
	// breaker): the attempt is recorded as an attempt, though deferred, so
	// that every call made has its attempt.
	Performed bool
}

// Deferred returns a *DeferredError waiting until until on target for
// reason.
func Deferred(until time.Time, target, reason string) error {
	return &DeferredError{Until: until, Target: target, Reason: reason}
}

// TargetKind is the kind of e.Target ("http"), for metrics.
func (e *DeferredError) TargetKind() string {
	kind, _, _ := strings.Cut(e.Target, ":")
	return kind
}

func (e *DeferredError) Error() string {
	return fmt.Sprintf("waiting until %s: %s", e.Until.UTC().Format(time.RFC3339Nano), e.Reason)
}
