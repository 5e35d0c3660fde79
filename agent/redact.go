package agent

import "strings"

// secretFree replaces the API key in s.
func (a *Agent) secretFree(s string) string {
	if a.cfg.APIKey == "" {
		return s
	}
	return strings.ReplaceAll(s, a.cfg.APIKey, "[redacted]")
}

// redact returns err with the API key removed from its message; errors.Is
// and errors.As still see err.
func (a *Agent) redact(err error) error {
	if err == nil || a.cfg.APIKey == "" || !strings.Contains(err.Error(), a.cfg.APIKey) {
		return err
	}
	return &redactedError{msg: a.secretFree(err.Error()), err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
