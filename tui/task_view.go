package tui

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/approvals"
	"github.com/agentledger/agentledger/operator"
	"github.com/agentledger/agentledger/render"
	"github.com/agentledger/agentledger/waits"
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
	field("Attempt", render.AttemptOf(t))
	field("Generation", strconv.Itoa(int(t.Generation)))
	w := m.waiting()
	switch {
	case t.State == agentledger.StateWaiting && w != nil:
		// What its wait waits for wakes it, or the wait's deadline
		// (its run_at) does.
		field("Wakes", wrap.Render(wakes(w.Wait, e.at)))
	case t.State == agentledger.StateWaiting:
		// No claim reads a waiting task: the decision wakes it, or its
		// deadline does.
		field("Deadline", wrap.Render(e.at(t.RunAt)+", unless a decision wakes it first"))
	case t.State.Finished():
		field("Run at", e.stamp(t.RunAt)) // it will not run: no countdown
	default:
		field("Run at", e.at(t.RunAt))
	}
	if reason := render.Waiting(t); reason != "" {
		field("Waiting", wrap.Render(reason))
	}
	if len(t.Needs) > 0 {
		field("Needs", wrap.Render(render.Needs(t.Needs)))
	}
	for _, r := range m.detail.Approvals {
		field("Approval", wrap.Render(m.approval(r)))
	}
	for _, w := range m.detail.Waits {
		field("Wait", wrap.Render(m.wait(w)))
	}
	field("Created", e.at(t.CreatedAt))
	field("Updated", e.at(t.UpdatedAt))
	field("Finished", e.stampPtr(t.FinishedAt))
	field("Idempotency key", orDash(t.SubmissionKey))
	field("Cancel requested", e.stampPtr(t.CancelRequested))
	field("Lease", wrap.Render(m.lease()))
	if at := render.Progress(t, m.detail.Journal); at != "" {
		field("Now at", wrap.Render(at))
	}
	field("Last error", wrap.Render(orDash(t.LastError)))
	if c, ok := render.CompensationOf(t, m.detail.Attempts, m.detail.Journal, m.detail.CompensationRequestedBy); ok {
		// A finished compensation clears the last error: say what caused it.
		field("Compensation", wrap.Render(c.String()))
		if c.Error != "" && c.Error != t.LastError {
			field("Failed with", wrap.Render(c.Error))
		}
	}
	for _, doc := range []struct {
		label string
		raw   []byte
	}{{"Payload", t.Payload}, {"Result", t.Result}} {
		if len(doc.raw) == 0 {
			field(doc.label, "-")
			continue
		}
		// Cut where the screen ends, marked: a cut URL must not pass
		// for a whole one (agentctl show prints it all).
		lines := strings.Split(prettyJSON(doc.raw), "\n")
		for i, l := range lines {
			lines[i] = cut(l, max(m.width-18, 20))
		}
		field(doc.label, strings.Join(lines, "\n"))
	}
	return strings.TrimRight(b.String(), "\n")
}

// approval says where request r of the task stands: since when it waits
// and who may decide, or how it was decided.
func (m taskModel) approval(r approvals.Request) string {
	e := m.env
	if r.State != approvals.Pending {
		return fmt.Sprintf("%d of step %s: %s\n%s", r.ID, r.Step, approvals.Summary(r), decision(r, e.at))
	}
	// The waiting reason above names the call.
	return fmt.Sprintf("%d of step %s, pending since %s\nmay decide: %s (y approves, d denies)\nexpires %s, then %s",
		r.ID, r.Step, e.at(r.RequestedAt), mayDecide(r), e.at(r.ExpiresAt), timeoutMeans(r))
}

// wait says where wait w of the task stands: what it waits for, and
// when it wakes the task, or how it ended and with what result.
func (m taskModel) wait(w Wait) string {
	e := m.env
	what := fmt.Sprintf("%d at step %s: %s", w.ID, w.Step, waitsFor(w.Wait))
	if w.Kind == waits.KindChildren {
		what += fmt.Sprintf(", %d of %d ended (%s)", w.Ended, w.Children, childrenRule(w.Spec))
	}
	if w.State != waits.Waiting {
		text := what + "\n" + endedHow(w.Wait, e.at)
		if len(w.Result) > 0 {
			text += "\nresult " + cut(oneLine(string(w.Result)), maxResultShown)
		}
		return text
	}
	// The overview's Wakes says what wakes the task; this, the instant.
	if w.Kind == waits.KindTimer {
		return what + "\nwaiting, due " + e.at(w.Deadline) + ": e ends the wait"
	}
	keys := "e ends the wait"
	if w.Kind == waits.KindSignal {
		keys = "s sends the signal, " + keys
	}
	return what + "\nwaiting, deadline " + e.at(w.Deadline) + ": " + keys
}

// maxResultShown is how much of a wait's result the task's page shows:
// the journal's row of the wait's step (enter expands it) holds it whole.
const maxResultShown = 240

// lease says who holds the task, with which fencing token, until when.
func (m taskModel) lease() string {
	l := render.LeaseOf(m.detail.Task, m.env.now())
	if l.None != "" {
		return l.None
	}
	exp := l.Expiry
	if l.Expired {
		exp = m.env.styles.Stale.Render(exp) + render.Claimable
	}
	return fmt.Sprintf("%s, fencing token %d, %s", l.Owner, l.Token, exp)
}

// attemptsLegend says what the attempts' columns mean: that attempts
// count again from 1 is what puzzles a reader. Its token sentence is the
// one for the columns shown (attemptsOrder without TOKEN).
const (
	attemptsLegend = "GEN: the generation; a re-run starts the next. ATTEMPT: counts from 1 in each run; " +
		"a replay, a retry or a resolve runs again from 1.%s %s ENDED: the time only, when on the day it started."
	attemptsDeferred = " (N): deferred, not counted."
	attemptsToken    = "TOKEN: the fencing token, new at each claim; rows are in its order."
	attemptsOrder    = "Rows are in the order of their fencing tokens, new at each claim."
)

// attempts is the table of the task's attempts, in the order they ran,
// with the columns agentctl show prints and the generation.
func (m taskModel) attempts() string {
	s := m.env.styles
	if len(m.detail.Attempts) == 0 {
		return s.Dim.Render("no attempts yet")
	}
	// Each column is as wide as its widest cell; ERROR takes the rest.
	// When that is under 20 cells STARTED goes (ENDED stays), then
	// TOKEN, then WORKER.
	header := []string{"GEN", "ATTEMPT", "WORKER", "TOKEN", "STARTED", "ENDED", "OUTCOME", "ERROR"}
	rows := make([][]string, len(m.detail.Attempts))
	for i, a := range m.detail.Attempts {
		ended := "-"
		if a.EndedAt != nil {
			ended = m.env.stampSince(*a.EndedAt, a.StartedAt)
		}
		rows[i] = []string{strconv.Itoa(int(a.Generation)), render.AttemptNumber(a), a.Worker,
			strconv.FormatInt(a.Token, 10), m.env.stamp(a.StartedAt), ended, render.AttemptOutcome(a), orDash(a.Error)}
	}
	keep := fitColumns(header, rows, m.width, 20, "STARTED", "TOKEN", "WORKER")
	head := keep(header)
	order := attemptsToken
	if !strings.Contains(head, "TOKEN") {
		order = attemptsOrder
	}
	deferred := ""
	if render.AnyDeferred(m.detail.Attempts) {
		deferred = attemptsDeferred
	}
	lines := []string{legend(s.Dim, fmt.Sprintf(attemptsLegend, deferred, order), m.width), s.Bold.Render(head)}
	for _, r := range rows {
		lines = append(lines, wrapLast(keep, r, m.width))
	}
	return cutLines(lines, m.width)
}

// fitColumns sizes each column but the last to its widest cell and, while
// the last would get fewer than want cells of width, drops the columns
// named in drop, in that order; want is at least the last header's width.
// It returns the function that lays a row
// out with the columns kept.
func fitColumns(header []string, rows [][]string, width, want int, drop ...string) func([]string) string {
	w := make([]int, len(header)-1)
	for i := range w {
		w[i] = ansi.StringWidth(header[i])
		for _, r := range rows {
			w[i] = max(w[i], ansi.StringWidth(oneLine(r[i])))
		}
	}
	if width > 0 { // a header cut ("LAST ER…") reads as broken: a column named in drop goes first
		want = max(want, ansi.StringWidth(header[len(header)-1]))
	}
	kept := make([]bool, len(header))
	for i := range kept {
		kept[i] = true
	}
	used := func() int {
		n := 0
		for i, x := range w {
			if kept[i] {
				n += x + 1
			}
		}
		return n
	}
	for _, name := range drop {
		if width-used() >= want {
			break
		}
		kept[slices.Index(header, name)] = false
	}
	var widths []int
	for i, x := range w {
		if kept[i] {
			widths = append(widths, x)
		}
	}
	return func(r []string) string {
		var cells []string
		for i, c := range r {
			if kept[i] {
				cells = append(cells, c)
			}
		}
		return columns(widths, cells...)
	}
}

// wrapLast lays r out with keep, its last cell wrapped in what width
// leaves it, under itself, on at most maxWrapped lines (the last cut):
// the last column is an error, what the reader came for, and these tables
// have no row to expand.
func wrapLast(keep func([]string) string, r []string, width int) string {
	last := oneLine(r[len(r)-1])
	head := keep(append(slices.Clone(r[:len(r)-1]), ""))
	indent := ansi.StringWidth(head)
	room := width - indent
	if room < 10 || ansi.StringWidth(last) <= room {
		return keep(r)
	}
	parts := strings.Split(ansi.Wrap(last, room, " "), "\n")
	if len(parts) > maxWrapped {
		parts = parts[:maxWrapped]
		parts[maxWrapped-1] = cut(parts[maxWrapped-1]+" …", room)
	}
	for i := 1; i < len(parts); i++ {
		parts[i] = strings.Repeat(" ", indent) + parts[i]
	}
	return head + strings.Join(parts, "\n")
}

// maxWrapped bounds the lines of one wrapped cell.
const maxWrapped = 4

// legend is text wrapped to width in style: a table's key to its columns.
func legend(style lipgloss.Style, text string, width int) string {
	return style.Width(max(width, 20)).Render(text)
}

// notificationsLegend says what the notifications' columns mean.
const notificationsLegend = "GEN: the generation the event is of. FAIL: failed deliveries. " +
	"REF: the message posted for the event, from its generation's journal; - until one is recorded."

// notifications is the table of the task's outbox events, each with the
// ref of the message posted for it, from its generation's journal.
func (m taskModel) notifications() string {
	s := m.env.styles
	if len(m.detail.Notifications) == 0 {
		return s.Dim.Render("no notifications")
	}
	// Each column is as wide as its widest cell (a ref at most 30); LAST
	// ERROR takes the rest. When that is under 20 cells GEN goes, then
	// FAIL, then RULE/STEP: why a delivery failed is what a reader came for.
	header := []string{"ID", "GEN", "EVENT", "RULE/STEP", "CHANNEL", "STATE", "FAIL", "REF", "LAST ERROR"}
	rows := make([][]string, len(m.detail.Notifications))
	for i, n := range m.detail.Notifications {
		rows[i] = []string{strconv.FormatInt(n.ID, 10), strconv.Itoa(int(n.Generation)), n.Event,
			orDash(render.NotificationSource(n)), n.Channel, string(n.State), strconv.Itoa(int(n.Failures)),
			cut(orDash(refFor(n, m.detail.journal(n.Generation))), 30), orDash(n.LastError)}
	}
	want := 0 // room for the widest error, up to 20: no error, nothing gives way
	for _, r := range rows {
		want = max(want, min(ansi.StringWidth(r[len(r)-1]), 20))
	}
	keep := fitColumns(header, rows, m.width, want, "GEN", "FAIL", "RULE/STEP")
	lines := []string{legend(s.Dim, notificationsLegend, m.width), s.Bold.Render(keep(header))}
	for _, r := range rows {
		lines = append(lines, wrapLast(keep, r, m.width))
	}
	return cutLines(lines, m.width)
}

// refFor finds the message posted for a notification event in the journal
// of its generation: the notify.post at the message's step, or for a
// rule's event at notify/<rule>/<event id> (a message posted anew) or
// notify/<rule> (the message its updates change).
func refFor(n operator.Notification, journal []operator.Effect) string {
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

// cutLines joins lines (which may hold several each), each cut to width.
func cutLines(lines []string, width int) string {
	lines = strings.Split(strings.Join(lines, "\n"), "\n")
	for i, l := range lines {
		lines[i] = cut(l, width)
	}
	return strings.Join(lines, "\n")
}
