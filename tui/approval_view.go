package tui

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"

	"github.com/agentledger/agentledger/approvals"
)

// requestHeader is the request page's first line: which request, its
// state, and whose.
func (m approvalsModel) requestHeader(r approvals.Request) string {
	s := m.env.styles
	return fmt.Sprintf("%s %s  %s  task %d  %s", s.Bold.Render("Approval"), s.Bold.Render(strconv.FormatInt(r.ID, 10)),
		m.env.requestState(r.State), r.TaskID, s.Dim.Render(fmt.Sprintf("%s · generation %d · step %s", r.Tenant, r.Generation, r.Step)))
}

// requestPage is everything about request r: the call exactly as it
// would be performed, the model's reason, who may decide, and the
// decision once there is one.
func (m approvalsModel) requestPage(r approvals.Request) string {
	e, s := m.env, m.env.styles
	wrap := lipgloss.NewStyle().Width(max(m.width-16, 20))
	var b strings.Builder
	field := func(label, value string) {
		for i, l := range strings.Split(value, "\n") {
			if i > 0 {
				label = ""
			}
			fmt.Fprintf(&b, "%s %s\n", s.Label.Render(fmt.Sprintf("%-15s", label)), l)
		}
	}
	field("Call", wrap.Render(approvals.Summary(r)))
	field("Tool", r.Tool+" ("+r.Class+" effect)")
	if r.Target != "" {
		field("Target", r.Target)
	}
	field("Asked", e.at(r.RequestedAt))
	if r.State == approvals.Pending {
		field("Expires", e.at(r.ExpiresAt)+", then "+timeoutMeans(r))
		field("May decide", wrap.Render(mayDecide(r)))
	} else {
		field("Decided", wrap.Render(decision(r, e.at)))
	}
	field("Model's reason", wrap.Render(orDash(r.Reason)))
	// Wrapped, never cut: an approver approves what the page shows.
	field("Arguments", wrap.Render(prettyJSON(r.Call)))
	return m.requestHeader(r) + "\n\n" + strings.TrimRight(b.String(), "\n")
}

// requestState renders a request's state: pending stands out, as it
// waits for someone.
func (e *env) requestState(state string) string {
	switch state {
	case approvals.Pending:
		return e.styles.Stale.Render(state)
	case approvals.Approved:
		return e.styles.Status.Render(state)
	}
	return e.styles.Dim.Render(state)
}

// timeoutMeans is what the timeout of r decides.
func timeoutMeans(r approvals.Request) string {
	if r.OnTimeout == "approve" {
		return "approved"
	}
	return "denied"
}

// mayDecide says who may decide r: its Slack approvers, and the
// operators.
func mayDecide(r approvals.Request) string {
	who := "any approver in Slack"
	if len(r.Approvers) > 0 {
		who = "Slack " + strings.Join(r.Approvers, ", ")
	}
	return who + ", or an operator (console, agentctl)"
}

// decision says how r was decided: by whom, from where, when and why.
// at prints the instant.
func decision(r approvals.Request, at func(time.Time) string) string {
	when := "-"
	if r.DecidedAt != nil {
		when = at(*r.DecidedAt)
	}
	var text string
	switch {
	case r.State == approvals.Pending:
		return "not yet"
	case r.DecidedVia == "timeout":
		text = fmt.Sprintf("%s by its timeout at %s", r.State, when)
	case r.State == approvals.Withdrawn:
		text = "withdrawn at " + when // the reason says why: its task was cancelled
	default:
		text = fmt.Sprintf("%s by %s via %s at %s", r.State, r.DecidedBy, r.DecidedVia, when)
	}
	if r.DecisionReason != "" {
		text += ": " + oneLine(r.DecisionReason)
	}
	return text
}

// decidedAlready says what happened to r when a decision on it lost.
func decidedAlready(r approvals.Request) string {
	first := "was decided first"
	if r.State == approvals.Expired || r.State == approvals.Withdrawn {
		first = "ended first" // nobody decided it
	}
	return fmt.Sprintf("approval %d %s — %s; yours changed nothing", r.ID, first,
		decision(r, func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }))
}
