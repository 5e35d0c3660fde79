package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentledger/agentledger"
)

// Approval is a gate on an effect: before the effect is performed, a
// person decides (package approvals, an Interceptor on the Path). It is
// declared per step of a steps task ("approve"), per tool, per agent tool,
// or by the daemon's policy; Call.Approval carries it to the gate.
type Approval struct {
	// Approvers are who may decide from Slack: user ids (U…) and user
	// groups (S…); empty lets anyone in the channel decide. Operators
	// decide from agentctl and the console whatever it says.
	Approvers []string `json:"approvers,omitempty"`
	// Timeout is how long the request waits for a decision; zero is
	// DefaultApprovalTimeout, and at most MaxApprovalTimeout.
	Timeout time.Duration `json:"-"`
	// OnTimeout is what a request nobody decided in time means: "deny"
	// (the default) or "approve".
	OnTimeout string `json:"on_timeout,omitempty"`
	// Channel is the Slack channel the request is posted to; empty posts
	// it to the daemon's approvals channel.
	Channel string `json:"channel,omitempty"`
}

// DefaultApprovalTimeout is how long a request waits unless its gate says.
const DefaultApprovalTimeout = 24 * time.Hour

// MaxApprovalTimeout bounds a gate's timeout: a request is a task waiting.
const MaxApprovalTimeout = 30 * 24 * time.Hour

// ParseApproval reads a gate as a payload writes it: true (the defaults),
// or {"approvers": [...], "timeout": "2h", "on_timeout": "deny"|"approve",
// "channel": "payments-approvals"}.
// false and null declare none (nil). Errors say what is wrong in the
// payload's words.
func ParseApproval(raw json.RawMessage) (*Approval, error) {
	raw = bytes.TrimSpace(raw)
	switch string(raw) {
	case "", "null", "false":
		return nil, nil
	case "true":
		return &Approval{Timeout: DefaultApprovalTimeout, OnTimeout: "deny"}, nil
	}
	var w struct {
		Approvers []string `json:"approvers"`
		Timeout   string   `json:"timeout"`
		OnTimeout string   `json:"on_timeout"`
		Channel   string   `json:"channel"`
	}
	const shape = `approve must be true or {"approvers": […], "timeout": "2h", "on_timeout": "deny"|"approve", "channel": "…"}`
	switch raw[0] {
	case '{':
	case '"':
		return nil, fmt.Errorf("%s, not a string", shape)
	case '[':
		return nil, fmt.Errorf("%s, not an array", shape)
	default:
		return nil, fmt.Errorf("%s, not %.20s", shape, raw)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, fmt.Errorf("%s: %s %s", shape, te.Field, agentledger.TypeProblem(te))
		}
		return nil, fmt.Errorf("%s: %v", shape, err)
	}
	a := &Approval{Timeout: DefaultApprovalTimeout, OnTimeout: "deny"}
	for _, id := range w.Approvers {
		id = strings.TrimSpace(id)
		if err := checkApprover(id); err != nil {
			return nil, fmt.Errorf("approve: %w", err)
		}
		a.Approvers = append(a.Approvers, id)
	}
	slices.Sort(a.Approvers)
	a.Approvers = slices.Compact(a.Approvers)
	if w.Timeout != "" {
		d, err := time.ParseDuration(w.Timeout)
		if err != nil || d <= 0 || d > MaxApprovalTimeout {
			return nil, fmt.Errorf("approve: timeout %q must be a duration from 1s to %s, like 30m or 48h", w.Timeout, MaxApprovalTimeout)
		}
		a.Timeout = d
	}
	switch w.OnTimeout {
	case "", "deny":
	case "approve":
		a.OnTimeout = "approve"
	default:
		return nil, fmt.Errorf("approve: on_timeout %q must be deny or approve", w.OnTimeout)
	}
	if w.Channel != "" {
		if err := checkChannel(w.Channel); err != nil {
			return nil, fmt.Errorf("approve: %w", err)
		}
		a.Channel = w.Channel
	}
	return a, nil
}

// Check refuses a gate a program declared (Spec.Approval, a daemon's
// policy) that could not be asked as written, as ParseApproval refuses a
// payload's: a negative Timeout or one over MaxApprovalTimeout (zero is
// the default), an OnTimeout other than deny or approve (empty: deny),
// an approver or a channel Slack has no such id or name for.
func (a *Approval) Check() error {
	switch {
	case a.Timeout < 0 || a.Timeout > MaxApprovalTimeout:
		return fmt.Errorf("Timeout %s must be positive and at most %s (0 is the default, %s)", a.Timeout, MaxApprovalTimeout, DefaultApprovalTimeout)
	case a.OnTimeout != "" && a.OnTimeout != "deny" && a.OnTimeout != "approve":
		return fmt.Errorf("OnTimeout %q must be deny or approve (empty: deny)", a.OnTimeout)
	case a.Channel != "":
		if err := checkChannel(a.Channel); err != nil {
			return err
		}
	}
	for _, id := range a.Approvers {
		if err := checkApprover(id); err != nil {
			return err
		}
	}
	return nil
}

// checkApprover refuses an approver no Slack user or group has for id.
func checkApprover(id string) error {
	if !slackPrincipal(id) {
		return fmt.Errorf("approver %q is not a Slack user or group id (U…, W…, S…: capital letters and digits)", id)
	}
	return nil
}

// checkChannel refuses a channel Slack could not name.
func checkChannel(c string) error {
	if !validChannel(c) {
		return fmt.Errorf("channel %q must be a Slack channel name (lowercase letters, digits, - and _, at most 80) or id (C…), without #", c)
	}
	return nil
}

// slackPrincipal reports whether id can name a Slack user (U…, or W… in
// an Enterprise Grid) or user group (S…): Slack's ids are a capital
// letter then capitals and digits. A name ("bob") would never match the
// user who clicks, so the request could be decided from Slack by nobody.
func slackPrincipal(id string) bool {
	if len(id) < 2 || len(id) > 64 || !strings.ContainsRune("UWS", rune(id[0])) {
		return false
	}
	for _, r := range id[1:] {
		if !(r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// validChannel reports whether c can name a Slack channel: a name as
// Slack allows them, or an id.
func validChannel(c string) bool {
	if len(c) > 80 {
		return false
	}
	for _, r := range c {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// Approver is a tool whose every call needs a person's decision (a tool
// defined with Spec.Approval, an MCP server's destructive tool by
// configuration): the gate's Policy asks it.
type Approver interface {
	Approval() *Approval
}

// ApprovalOf is the gate of o's tool, when it declares one.
func ApprovalOf(o *Outgoing) *Approval {
	if g, ok := o.Tool.(Approver); ok {
		return g.Approval()
	}
	return nil
}

// NotApprovedError is an effect a person (or a timeout) did not approve:
// it was not performed. A steps task fails for good (its compensations
// run when declared); an agent is told, and goes on.
type NotApprovedError struct {
	// Request is the approval request's id.
	Request int64
	// Outcome is "denied" or "expired" (timed out, deny).
	Outcome string
	// By and Via say who decided and where ("U123", "slack"); empty for
	// a timeout.
	By, Via string
	// Reason is the decider's, or the timeout's.
	Reason string
}

func (e *NotApprovedError) Error() string {
	switch {
	case e.Outcome == "expired":
		return fmt.Sprintf("approval request %d timed out: %s", e.Request, e.Reason)
	case e.Reason == "":
		return fmt.Sprintf("approval request %d denied by %s (%s)", e.Request, e.By, e.Via)
	}
	return fmt.Sprintf("approval request %d denied by %s (%s): %s", e.Request, e.By, e.Via, e.Reason)
}
