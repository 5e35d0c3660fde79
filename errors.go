package agentledger

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors. Callers test them with errors.Is; packages wrap them with
// context, never replace them.
var (
	// ErrNotFound: the task (or other object) does not exist for this tenant.
	ErrNotFound = errors.New("not found")
	// ErrInvalid: the input was rejected before anything was changed.
	ErrInvalid = errors.New("invalid input")
	// ErrLeaseLost: the attempt's fencing token is no longer current; its
	// write changed nothing and the attempt must stop (invariant I2).
	ErrLeaseLost = errors.New("lease lost")
	// ErrKeyReuse: a key was presented again with a different request
	// (invariant I4). Nothing was performed or stored.
	ErrKeyReuse = errors.New("key reused with a different request")
	// ErrConflict: the object is not in a state that allows the operation.
	ErrConflict = errors.New("conflict")
	// ErrCancelled: the task was cancelled while it ran (by the operator,
	// or its tenant through the API).
	ErrCancelled = errors.New("task cancelled")
	// ErrForbidden: the tenant's grant does not allow it; nothing was
	// performed or recorded.
	ErrForbidden = errors.New("forbidden by the tenant's grant")
	// ErrNeedsAttention: an effect's outcome is unknown and its class
	// forbids performing it blindly; the task waits for an operator.
	ErrNeedsAttention = errors.New("effect outcome unknown: an operator must resolve it")
)

// InvalidError names the field that made an input invalid. It matches
// ErrInvalid with errors.Is.
type InvalidError struct {
	Field   string
	Problem string
}

// Invalid returns an *InvalidError for field.
func Invalid(field, format string, args ...any) error {
	return &InvalidError{Field: field, Problem: fmt.Sprintf(format, args...)}
}

func (e *InvalidError) Error() string {
	if e.Field == "" {
		return e.Problem
	}
	return e.Field + ": " + e.Problem
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

// PermanentError marks a handler error that retrying cannot fix: the task is
// dead-lettered at once instead of retried.
type PermanentError struct{ Err error }

// Permanent wraps err so the worker fails the task finally.
func Permanent(err error) error { return &PermanentError{Err: err} }

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// RetryAfterError asks for the next attempt no sooner than After (for
// example when a downstream answered 429 with Retry-After).
type RetryAfterError struct {
	Err   error
	After time.Duration
}

// RetryAfter wraps err with the delay the next attempt must wait.
func RetryAfter(err error, after time.Duration) error {
	return &RetryAfterError{Err: err, After: after}
}

func (e *RetryAfterError) Error() string {
	return fmt.Sprintf("%v (retry after %s)", e.Err, e.After)
}
func (e *RetryAfterError) Unwrap() error { return e.Err }
