package agentledger

import (
	"fmt"
	"time"
)

// DeferredError says an attempt did nothing outside and waits for capacity
// (a fleet-wide rate limit): the worker queues its task again to run at
// Until without counting the attempt, and shows Reason meanwhile. Test for
// it with errors.As; packages wrap it with context, never replace it.
type DeferredError struct {
	// Until is when the task may run again.
	Until time.Time
	// Reason says what it waits for, for operators; never a secret.
	Reason string
}

// Deferred returns a *DeferredError waiting until until for reason.
func Deferred(until time.Time, reason string) error {
	return &DeferredError{Until: until, Reason: reason}
}

func (e *DeferredError) Error() string {
	return fmt.Sprintf("waiting until %s: %s", e.Until.UTC().Format(time.RFC3339Nano), e.Reason)
}
