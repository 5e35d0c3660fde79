package slackui

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/approvals"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/notify"
	"github.com/agentledger/agentledger/notify/slack"
)

// The buttons' action ids; their value is the request's id.
const (
	ActionApprove = "approve"
	ActionDeny    = "deny"
	// BlockID names the buttons' block.
	BlockID = "agentledger_approval"
)

// Buttons are a pending request's.
func Buttons(r approvals.Request) []slack.Button {
	id := strconv.FormatInt(r.ID, 10)
	return []slack.Button{
		{ActionID: ActionApprove, Text: "Approve", Value: id, Style: "primary"},
		{ActionID: ActionDeny, Text: "Deny", Value: id, Style: "danger"},
	}
}

// maxCall bounds the arguments shown; the request keeps them whole.
const maxCall = 2500

// Message lays r out as its Slack post shows it: the call in a line as
// the title, who may decide and until when, the arguments, the model's
// reason, and, once decided, who decided, how and when.
func Message(r approvals.Request, channel string) notify.Message {
	at := func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }
	who := "anyone in the channel"
	if len(r.Approvers) > 0 {
		who = strings.Join(r.Approvers, ", ")
	}
	m := notify.Message{
		Channel: channel,
		Title:   fmt.Sprintf("Approval %d: %s", r.ID, approvals.Summary(r)),
		Fields: []notify.Field{
			{Label: "Task", Value: fmt.Sprintf("%d (%s)", r.TaskID, r.Step)},
			{Label: "Tool", Value: r.Tool},
			{Label: "Class", Value: r.Class},
			{Label: "Approvers", Value: who},
		},
	}
	if r.Target != "" {
		m.Fields = append(m.Fields, notify.Field{Label: "Target", Value: r.Target})
	}
	var call bytes.Buffer
	if json.Indent(&call, r.Call, "", "  ") != nil {
		call.Reset()
		call.Write(r.Call)
	}
	args := call.String()
	if len(args) > maxCall {
		args = args[:maxCall] + "\n…"
	}
	text := "Arguments:\n```\n" + args + "\n```"
	if r.Reason != "" {
		text += "\nThe model's reason: " + r.Reason
	}
	switch r.State {
	case approvals.Pending:
		// A field, not small print: the console sink shows fields, and
		// when a request times out, and what that means, is the news.
		m.Fields = append(m.Fields, notify.Field{Label: "Expires",
			Value: fmt.Sprintf("%s: %s unless decided by then", at(r.ExpiresAt), timeoutMeans(r))})
		m.Footer = fmt.Sprintf("Asked %s", at(r.RequestedAt))
	default:
		m.Fields = append(m.Fields, notify.Field{Label: "Decision", Value: Decided(r)})
		m.Footer = fmt.Sprintf("Asked %s", at(r.RequestedAt))
	}
	m.Text = text
	return m
}

// Outcome says what an approved effect did, in the post's last edit:
// "performed at 2026-12-05 03:04:06 UTC: HTTP 201, ref ch_1004", or
// "failed at …: the error" (errors on the effect path carry no secrets:
// the tools redact what they quote).
func Outcome(res ledger.Result, err error, at time.Time) string {
	when := at.UTC().Format("2006-01-02 15:04:05 UTC")
	if err != nil {
		msg := err.Error()
		if len(msg) > 300 {
			msg = msg[:300] + "…"
		}
		if errors.Is(err, agentledger.ErrNeedsAttention) {
			return fmt.Sprintf("outcome unknown at %s, an operator resolves it: %s", when, msg)
		}
		return fmt.Sprintf("failed at %s: %s", when, msg)
	}
	var parts []string
	if res.Status != 0 {
		parts = append(parts, fmt.Sprintf("HTTP %d", res.Status))
	}
	if res.ExternalRef != "" {
		parts = append(parts, "ref "+res.ExternalRef)
	}
	s := "performed at " + when
	if len(parts) > 0 {
		s += ": " + strings.Join(parts, ", ")
	}
	return s
}

// timeoutMeans says what the request's timeout does.
func timeoutMeans(r approvals.Request) string {
	if r.OnTimeout == "approve" {
		return "approved"
	}
	return "denied"
}

// Decided says what became of a decided request: "approved by U123
// (slack) at 2026-12-05 03:04:05 UTC: looks right".
func Decided(r approvals.Request) string {
	s := r.State
	switch {
	case r.DecidedVia == "timeout":
		s += " by its timeout"
	case r.DecidedBy != "":
		s += fmt.Sprintf(" by %s (%s)", r.DecidedBy, r.DecidedVia)
	}
	if r.DecidedAt != nil {
		s += " at " + r.DecidedAt.UTC().Format("2006-01-02 15:04:05 UTC")
	}
	if r.DecisionReason != "" {
		s += ": " + r.DecisionReason
	}
	return s
}

// consoleButtons is the buttons as the console sink shows them.
const consoleButtons = "\n[ Approve ]  [ Deny ]  (decide with agentctl or the console)"
