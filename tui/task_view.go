package tui

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/charmbracelet/lipgloss"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/operator"
)

// View renders the task's summary line, the tabs and the current tab.
func (m taskModel) View() string {
	s := m.env.styles
	if m.detail == nil {
		msg := s.Dim.Render(fmt.Sprintf("loading task %d…", m.id))
		if m.err != nil {
			msg = s.Error.Render(m.err.Error())
		}
		return fit(msg, m.width, m.height)
	}
	t := m.detail.Task
	summary := fmt.Sprintf("%s %s  %s  %s  generation %d  attempt %d/%d", s.Bold.Render("Task"),
		s.Bold.Render(strconv.FormatInt(t.ID, 10)), s.State(t.State),
		s.Dim.Render(t.Tenant+"/"+t.Queue+"/"+t.Kind), t.Generation, t.Attempt, t.MaxAttempts)
	body := m.page.View()
	if m.tab == tabJournal {
		body = m.journal.View()
	}
	return cut(summary, m.width) + "\n" + cut(m.tabsLine(), m.width) + "\n" + fit(body, m.width, max(m.height-2, 1))
}

// tabsLine names the tabs, the current one highlighted and bracketed.
func (m taskModel) tabsLine() string {
	d := m.detail
	names := [tabs]string{"Overview", fmt.Sprintf("Attempts (%d)", len(d.Attempts)),
		fmt.Sprintf("Journal (%d)", len(d.Journal)), fmt.Sprintf("Notifications (%d)", len(d.Notifications))}
	parts := make([]string, len(names))
	for i, n := range names {
		if tab(i) == m.tab {
			parts[i] = m.env.styles.TabActive.Render("[" + n + "]")
		} else {
			parts[i] = m.env.styles.Tab.Render(" " + n + " ")
		}
	}
	return strings.Join(parts, " ")
}

// overview is every field of the task, its payload and its result.
func (m taskModel) overview() string {
	e, s, t := m.env, m.env.styles, m.detail.Task
	wrap := lipgloss.NewStyle().Width(max(m.width-18, 20))
	var b strings.Builder
	field := func(label, value string) {
		lines := strings.Split(value, "\n")
		for i, l := range lines {
			if i > 0 {
				label = ""
			}
			fmt.Fprintf(&b, "%s %s\n", s.Label.Render(fmt.Sprintf("%-17s", label)), l)
		}
	}
	field("State", s.State(t.State))
	field("Tenant", t.Tenant)
	field("Queue", t.Queue)
	field("Kind", t.Kind)
	field("Priority", strconv.Itoa(int(t.Priority)))
	field("Attempt", fmt.Sprintf("%d of %d", t.Attempt, t.MaxAttempts))
	field("Generation", strconv.Itoa(int(t.Generation)))
	field("Run at", e.at(t.RunAt))
	field("Created", e.at(t.CreatedAt))
	field("Updated", e.at(t.UpdatedAt))
	field("Finished", e.stampPtr(t.FinishedAt))
	field("Idempotency key", orDash(t.SubmissionKey))
	field("Cancel requested", e.stampPtr(t.CancelRequested))
	field("Lease", m.lease())
	field("Last error", wrap.Render(orDash(t.LastError)))
	for _, doc := range []struct {
		label string
		raw   []byte
	}{{"Payload", t.Payload}, {"Result", t.Result}} {
		if len(doc.raw) == 0 {
			field(doc.label, "-")
			continue
		}
		field(doc.label, prettyJSON(doc.raw))
	}
	return strings.TrimRight(b.String(), "\n")
}

// lease says who holds the task, with which fencing token, until when.
func (m taskModel) lease() string {
	t, now := m.detail.Task, m.env.now()
	if t.State != agentledger.StateRunning || t.LeaseExpiresAt == nil {
		if t.LeaseToken > 0 {
			return fmt.Sprintf("none (last fencing token %d)", t.LeaseToken)
		}
		return "none"
	}
	exp := "expires " + relative(*t.LeaseExpiresAt, now)
	if !t.LeaseExpiresAt.After(now) {
		exp = m.env.styles.Stale.Render("expired "+relative(*t.LeaseExpiresAt, now)) + ", claimable by another worker"
	}
	return fmt.Sprintf("%s, fencing token %d, %s", t.LeaseOwner, t.LeaseToken, exp)
}

// attempts is the table of the task's attempts.
func (m taskModel) attempts() string {
	s := m.env.styles
	if len(m.detail.Attempts) == 0 {
		return s.Dim.Render("no attempts yet")
	}
	w := []int{3, 18, 5, 19, 7, 13}
	lines := []string{s.Bold.Render(columns(w, "#", "WORKER", "TOKEN", "STARTED", "ENDED", "OUTCOME", "ERROR"))}
	for _, a := range m.detail.Attempts {
		ended, outcome := "-", string(a.Outcome)
		if a.EndedAt == nil {
			outcome = "in progress"
		} else {
			ended = "+" + short(a.EndedAt.Sub(a.StartedAt))
		}
		lines = append(lines, columns(w, strconv.Itoa(int(a.Attempt)), a.Worker, strconv.FormatInt(a.Token, 10),
			m.env.stamp(a.StartedAt), ended, outcome, orDash(a.Error)))
	}
	return cutLines(lines, m.width)
}

// notifications is the table of the task's outbox events, each with the
// ref of the message posted for it, from the journal.
func (m taskModel) notifications() string {
	s := m.env.styles
	if len(m.detail.Notifications) == 0 {
		return s.Dim.Render("no notifications")
	}
	w := []int{4, 15, 14, 10, 9, 4, 0}
	w[6] = max(12, min(30, (m.width-63)*3/5)) // REF: the rest, shared with LAST ERROR
	lines := []string{s.Bold.Render(columns(w, "ID", "EVENT", "RULE/STEP", "CHANNEL", "STATE", "FAIL", "REF", "LAST ERROR"))}
	for _, n := range m.detail.Notifications {
		source := n.Rule
		if source == "" {
			source = n.Step
		}
		lines = append(lines, columns(w, strconv.FormatInt(n.ID, 10), n.Event, orDash(source), n.Channel,
			string(n.State), strconv.Itoa(int(n.Failures)), orDash(refFor(n, m.detail.Task.Generation, m.detail.Journal)),
			orDash(n.LastError)))
	}
	return cutLines(lines, m.width)
}

// refFor finds the message posted for a notification event: the journal's
// notify.post at the message's step, or for a rule's event at
// notify/<rule>/<event id> (a message posted anew) or notify/<rule>. Only
// events of the journal's generation can be matched.
func refFor(n operator.Notification, generation int32, journal []operator.Effect) string {
	if n.Generation != generation {
		return ""
	}
	steps := []string{n.Step}
	if n.Rule != "" {
		steps = []string{fmt.Sprintf("notify/%s/%d", n.Rule, n.ID), "notify/" + n.Rule}
	}
	for _, step := range steps {
		for _, e := range journal {
			if e.Operation == "notify.post" && e.Step == step && e.ExternalRef != "" {
				return e.ExternalRef
			}
		}
	}
	return ""
}

// cutLines joins lines, each cut to width.
func cutLines(lines []string, width int) string {
	for i, l := range lines {
		lines[i] = cut(l, width)
	}
	return strings.Join(lines, "\n")
}
