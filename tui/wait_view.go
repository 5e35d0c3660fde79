package tui

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"

	"github.com/agentledger/agentledger/waits"
)

// waitHeader is the wait page's first line: which wait, its state, and
// whose.
func (m waitsModel) waitHeader(w Wait) string {
	s := m.env.styles
	return fmt.Sprintf("%s %s  %s  task %d  %s", s.Bold.Render("Wait"), s.Bold.Render(strconv.FormatInt(w.ID, 10)),
		m.env.waitState(w.State), w.TaskID, s.Dim.Render(fmt.Sprintf("%s · generation %d · step %s", w.Tenant, w.Generation, w.Step)))
}

// waitPage is everything about wait w: what it waits for (a children
// wait's spec whole), when it began, its deadline and what that does,
// and how it ended, with its result.
func (m waitsModel) waitPage(w Wait) string {
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
	switch w.Kind {
	case waits.KindSignal:
		field("Waits for", "a signal")
		field("Signal", w.Signal)
		field("Key", wrap.Render(w.Key))
	case waits.KindTimer:
		field("Waits for", "a timer, due "+e.at(w.Deadline))
	default:
		field("Waits for", wrap.Render(fmt.Sprintf("its children: %d of %d ended; %s", w.Ended, w.Children, childrenRule(w.Spec))))
		field("Spec", prettyJSON(w.Spec))
	}
	field("Created", e.at(w.CreatedAt))
	if w.State == waits.Waiting {
		field("Deadline", wrap.Render(e.at(w.Deadline)+", then "+deadlineMeans(w.Kind)))
	} else {
		field("Deadline", e.at(w.Deadline))
		field("Ended", wrap.Render(endedHow(w.Wait, e.at)))
	}
	if w.SignalID != nil {
		field("Signal sent", "signal "+strconv.FormatInt(*w.SignalID, 10))
	}
	if len(w.Result) > 0 {
		field("Result", prettyJSON(w.Result))
	}
	return m.waitHeader(w) + "\n\n" + strings.TrimRight(b.String(), "\n")
}

// waitState renders a wait's state: waiting stands out, as the task
// waits on it; done is a success; the other ends failed the call.
func (e *env) waitState(state string) string {
	switch state {
	case waits.Waiting:
		return e.styles.Stale.Render(state)
	case waits.Done:
		return e.styles.Status.Render(state)
	}
	return e.styles.Dim.Render(state)
}

// deadlineMeans is what a wait's deadline does to the call waiting on it.
func deadlineMeans(kind string) string {
	if kind == waits.KindTimer {
		return "it fires and the task goes on"
	}
	return "the call times out and fails"
}

// wakes says when a task waiting on w wakes, and what else may wake it
// first. at prints the instant.
func wakes(w waits.Wait, at func(time.Time) string) string {
	switch w.Kind {
	case waits.KindSignal:
		return fmt.Sprintf("when its signal comes, or at %s to time out", at(w.Deadline))
	case waits.KindTimer:
		return "at " + at(w.Deadline) + ", when its timer fires"
	}
	return fmt.Sprintf("when its children end, or at %s to time out", at(w.Deadline))
}

// waitsFor says what w waits for, in a phrase.
func waitsFor(w waits.Wait) string {
	switch w.Kind {
	case waits.KindSignal:
		return fmt.Sprintf("signal %s key %s", w.Signal, w.Key)
	case waits.KindTimer:
		return "a timer"
	}
	return "its children"
}

// endedHow says how w ended: by what, when, and why. at prints the
// instant.
func endedHow(w waits.Wait, at func(time.Time) string) string {
	if w.State == waits.Waiting || w.EndedAt == nil {
		return "not yet"
	}
	text := fmt.Sprintf("%s by %s at %s", w.State, orDash(w.EndedBy), at(*w.EndedAt))
	if w.EndReason != "" {
		text += ": " + oneLine(w.EndReason)
	}
	if w.ReplacedAt != nil {
		text += "; replaced by a replay's wait at " + at(*w.ReplacedAt)
	}
	return text
}

// endedAlready says what happened to w when an operator's action on it
// found it ended.
func endedAlready(w waits.Wait) string {
	return fmt.Sprintf("wait %d ended first — %s", w.ID,
		endedHow(w, func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }))
}

// childrenRule says how a children wait with spec ends: which children
// it waits for, and what a failed one does.
func childrenRule(spec json.RawMessage) string {
	var c waits.ChildrenSpec
	_ = json.Unmarshal(spec, &c) // a spec the console cannot read says the defaults
	switch {
	case c.Mode == "any" && c.OnFailure == "return":
		return "the first to succeed, failures returned"
	case c.Mode == "any":
		return "the first to succeed; fails if none does"
	case c.OnFailure == "return":
		return "all of them, failures returned"
	}
	return "all of them, a failure fails it"
}
