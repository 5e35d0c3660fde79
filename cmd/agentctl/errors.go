package main

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

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

// usageError marks err, from cobra or pflag, as a usage error, in words
// rather than strconv's.
func usageError(err error) error {
	return &cliError{msg: readableFlagError(err.Error()), err: errUsage}
}

// flagValueError is pflag's message for a value its flag cannot parse.
var flagValueError = regexp.MustCompile(`^invalid argument "(.*)" for "(.*)" flag: (.*)$`)

// readableFlagError rewrites pflag's "invalid argument … strconv.ParseInt:
// parsing …: invalid syntax" as a sentence that says what the flag takes.
func readableFlagError(msg string) string {
	m := flagValueError.FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	value, flag, cause := m[1], m[2], m[3]
	var want string
	switch {
	case strings.Contains(cause, "value out of range"):
		want = "a number in range"
	case strings.HasPrefix(cause, "strconv.ParseInt"), strings.HasPrefix(cause, "strconv.ParseUint"):
		want = "a whole number"
	case strings.HasPrefix(cause, "strconv.ParseFloat"):
		want = "a number"
	case strings.HasPrefix(cause, "strconv.ParseBool"):
		want = "true or false"
	case strings.HasPrefix(cause, "time: "):
		want = "a duration such as 30s, 5m or 1h"
	default:
		return fmt.Sprintf("%s: %q is not a valid value: %s", flag, value, cause)
	}
	if value == "" {
		return fmt.Sprintf("%s takes %s", flag, want)
	}
	return fmt.Sprintf("%s takes %s, not %q", flag, want, value)
}

// exitCode maps an error to agentctl's exit code: 2 for usage, otherwise
// the exit status of the error's kind in the error vocabulary (2 for
// invalid input, 1 for every failed operation).
func exitCode(err error, started bool) int {
	switch {
	case err == nil:
		return 0
	case !started, errors.Is(err, errUsage):
		return 2
	default:
		return agentledger.KindOf(err).Exit
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
