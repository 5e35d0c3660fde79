package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentledger/agentledger"
)

// errUsage marks a command line agentctl cannot act on: exit code 2.
var errUsage = errors.New("usage")

// cliError is an error as agentctl reports it: its own message in place of
// the cause's (when set) and an optional hint. Unwrap keeps the cause, so
// the exit code still follows the sentinel errors it wraps.
type cliError struct {
	msg  string
	hint string
	err  error
}

func (e *cliError) Error() string {
	if e.msg == "" && e.err != nil {
		return e.err.Error()
	}
	return e.msg
}

func (e *cliError) Unwrap() error { return e.err }

// newError returns an error printed as msg that wraps cause (may be nil).
func newError(msg string, cause error) error { return &cliError{msg: msg, err: cause} }

// withHint adds a hint, printed on its own line, to err.
func withHint(err error, hint string) error { return &cliError{hint: hint, err: err} }

// usagef returns a usage error (exit code 2) with a formatted message.
func usagef(format string, args ...any) error {
	return &cliError{msg: fmt.Sprintf(format, args...), err: errUsage}
}

// usageError marks err, from cobra or pflag, as a usage error.
func usageError(err error) error { return &cliError{msg: err.Error(), err: errUsage} }

// exitCode maps an error to agentctl's exit code: 2 for usage and invalid
// input, 1 for every failed operation.
func exitCode(err error, started bool) int {
	switch {
	case err == nil:
		return 0
	case !started, errors.Is(err, errUsage), errors.Is(err, agentledger.ErrInvalid):
		return 2
	default:
		return 1
	}
}

// report prints err to stderr, with its hint, and returns the exit code.
func (a *app) report(cmd *cobra.Command, err error) int {
	code := exitCode(err, a.started)
	fmt.Fprintf(a.stderr, "agentctl: %v\n", err)
	switch hint := hintOf(err); {
	case hint != "":
		fmt.Fprintf(a.stderr, "hint: %s\n", hint)
	case cmd != nil && (!a.started || errors.Is(err, errUsage)):
		fmt.Fprintf(a.stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
	return code
}

// hintOf returns the first hint in err's chain.
func hintOf(err error) string {
	for ; err != nil; err = errors.Unwrap(err) {
		if ce, ok := err.(*cliError); ok && ce.hint != "" {
			return ce.hint
		}
	}
	return ""
}
