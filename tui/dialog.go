package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
)

// dialogModel asks the operator to confirm an action. A dialog with a note
// (resolve) also takes a text and a choice between done and allow retry;
// one with an optional note (approve) takes a text only when asked to.
type dialogModel struct {
	env    *env
	title  string
	lines  []string
	danger bool
	// confirm is the action's command; for a dialog with a note it gets
	// the note and whether the effect is done.
	confirm func(note string, done bool) tea.Cmd

	withNote bool
	note     textinput.Model
	toggle   bool   // the note comes with the done/retry choice (resolve)
	verb     string // what enter does, in the hint
	required string // the problem of an empty note
	done     bool
	problem  string

	// optional: the note may stay empty (approve's reason). The dialog
	// opens as a confirmation that y alone confirms, the note with it; r
	// gives the keys to the note (editing), where enter confirms with it
	// and esc gives them back, the note kept.
	optional bool
	editing  bool
	// dropNote is the status when a cancel drops the note typed (dropped):
	// nothing was decided, and the operator is told it was not recorded.
	dropNote string
	dropped  bool

	// payload: the note is a JSON document (a signal's payload), accepted
	// once checked: see newPayloadDialog. It shares optional's keys.
	payload  bool
	accepted string

	closed        bool
	width, height int
}

func newDialog(e *env, title string, lines []string, confirm func() tea.Cmd) *dialogModel {
	return &dialogModel{env: e, title: title, lines: lines,
		confirm: func(string, bool) tea.Cmd { return confirm() }}
}

// newNoteDialog is a dialog that asks for a note and a resolution.
func newNoteDialog(e *env, title string, lines []string, confirm func(note string, done bool) tea.Cmd) (*dialogModel, tea.Cmd) {
	d := &dialogModel{env: e, title: title, lines: lines, confirm: confirm, withNote: true, toggle: true, done: true,
		verb: "confirm", required: "a note is required: say what you checked", note: newInput("note: ", "why: what you checked")}
	return d, d.note.Focus()
}

// newReasonDialog is a dialog that asks for a reason, required, before
// verb (deny) is done.
func newReasonDialog(e *env, title, verb string, lines []string, confirm func(reason string) tea.Cmd) (*dialogModel, tea.Cmd) {
	d := &dialogModel{env: e, title: title, lines: lines, withNote: true, verb: verb, danger: true,
		required: "a reason is required: the task's journal and the requester read it",
		note:     newInput("reason: ", "why, for the record"),
		confirm:  func(reason string, _ bool) tea.Cmd { return confirm(reason) }}
	return d, d.note.Focus()
}

// newOptionalReasonDialog is a confirmation that y alone confirms, of a
// dangerous action (approve) that may carry a reason: r opens its input.
// dropNote is the status if a cancel drops a reason typed.
func newOptionalReasonDialog(e *env, title, verb, dropNote string, lines []string, confirm func(reason string) tea.Cmd) *dialogModel {
	return &dialogModel{env: e, title: title, lines: lines, danger: true, optional: true, verb: verb, dropNote: dropNote,
		note:    newInput("reason: ", "why, for the record"),
		confirm: func(reason string, _ bool) tea.Cmd { return confirm(reason) }}
}

func (d *dialogModel) setSize(width, height int) {
	d.width, d.height = width, height
	d.note.Width = max(d.innerWidth()-8, 10)
}

// innerWidth is the width of the dialog's text.
func (d *dialogModel) innerWidth() int { return max(min(d.width-4, 84)-4, 20) }

// Update confirms, cancels, or edits the note.
func (d dialogModel) Update(msg tea.KeyMsg) (dialogModel, tea.Cmd) {
	k := d.env.keys
	if d.optional {
		return d.updateOptional(msg)
	}
	if d.payload {
		return d.updatePayload(msg)
	}
	if !d.withNote {
		switch {
		case d.danger && key.Matches(msg, k.Confirm) && !key.Matches(msg, k.ConfirmKey):
			d.problem = "press y to confirm: it cannot be taken back"
			return d, nil
		case key.Matches(msg, k.Confirm):
			d.closed = true
			return d, d.confirm("", false)
		case key.Matches(msg, k.Deny):
			d.closed = true
		}
		return d, nil
	}
	switch {
	case key.Matches(msg, k.Back):
		d.closed = true
		return d, nil
	case d.toggle && key.Matches(msg, k.ToggleMode):
		d.done = !d.done
		return d, nil
	case key.Matches(msg, k.Apply):
		note := strings.TrimSpace(d.note.Value())
		if note == "" {
			d.problem = d.required
			return d, nil
		}
		d.closed = true
		return d, d.confirm(note, d.done)
	}
	var cmd tea.Cmd
	d.note, cmd = d.note.Update(msg)
	d.problem = ""
	return d, cmd
}

// updateOptional is Update for a dialog whose note is optional. Only y
// confirms from the preview, enter only from the note, and only with a
// note: a stray key never confirms, nor drops the note unsaid.
func (d dialogModel) updateOptional(msg tea.KeyMsg) (dialogModel, tea.Cmd) {
	k := d.env.keys
	note := strings.TrimSpace(d.note.Value())
	if d.editing {
		switch {
		case key.Matches(msg, k.Back):
			d.editing, d.problem = false, ""
			d.note.Blur()
			return d, nil
		case key.Matches(msg, k.Apply):
			if note == "" {
				d.problem = "the reason is empty: type one, or esc, then y to " + d.verb + " without one"
				return d, nil
			}
			d.closed = true
			return d, d.confirm(note, false)
		}
		var cmd tea.Cmd
		d.note, cmd = d.note.Update(msg)
		d.problem = ""
		return d, cmd
	}
	switch {
	case key.Matches(msg, k.ConfirmKey):
		d.closed = true
		return d, d.confirm(note, false)
	case key.Matches(msg, k.Confirm):
		d.problem = "press y to confirm: it cannot be taken back"
	case key.Matches(msg, k.Reason):
		d.editing, d.problem = true, ""
		return d, d.note.Focus()
	case key.Matches(msg, k.Deny):
		d.closed, d.dropped = true, note != ""
	}
	return d, nil
}

// hint is the line under the dialog that says what its keys do.
func (d dialogModel) hint() string {
	switch {
	case d.payload && d.editing:
		return "enter check the payload · esc back (the payload unchanged)"
	case d.payload:
		return "y " + d.verb + " with this payload · p edit the payload · n/esc close"
	case d.optional && d.editing:
		return "enter " + d.verb + " with this reason · esc back (the reason is kept)"
	case d.optional && strings.TrimSpace(d.note.Value()) != "":
		return "y " + d.verb + " with this reason · r edit it · n/esc close"
	case d.optional:
		return "y " + d.verb + " · r add a reason · n/esc close"
	case d.withNote && d.toggle:
		return "tab done/retry · enter " + d.verb + " · esc close"
	case d.withNote:
		return "enter " + d.verb + " · esc close"
	case d.danger:
		return "y confirm · n/esc close"
	}
	return "y/enter confirm · n/esc close"
}

// View renders the dialog's box.
func (d dialogModel) View() string {
	s := d.env.styles
	w := d.innerWidth()
	title := s.Bold.Render(d.title)
	if d.danger {
		title = s.Danger.Render(d.title)
	}
	body := []string{title, ""}
	for _, l := range d.lines {
		if strings.HasPrefix(l, "\t") { // a table line: cut, never wrapped
			body = append(body, cut(l[1:], w))
			continue
		}
		text := strings.TrimLeft(l, " ") // leading spaces indent every wrapped line
		indent := min(len(l)-len(text), w/2)
		body = append(body, lipgloss.NewStyle().Width(w).PaddingLeft(indent).Render(text))
	}
	// The note shows while it takes the keys or holds a text; an optional
	// one stays out of the way until then. A payload always shows.
	if d.payload {
		body = append(append(body, ""), d.payloadView()...)
	} else if d.withNote || d.editing || strings.TrimSpace(d.note.Value()) != "" {
		if d.toggle {
			radio := func(on bool, label string) string {
				if on {
					return s.Bold.Render("(•) " + label)
				}
				return "( ) " + label
			}
			body = append(body, "",
				radio(d.done, "done: it happened; the ledger serves it from now on"),
				radio(!d.done, "allow retry: it did not happen; perform it once more"))
		}
		body = append(body, "", d.note.View())
		if d.problem != "" {
			body = append(body, s.Error.Width(w).Render(d.problem)) // wrapped: the box keeps its border
		}
	} else if d.problem != "" {
		body = append(body, "", s.Error.Width(w).Render(d.problem))
	}
	body = append(body, "", s.Dim.Render(d.hint()))
	text := strings.Join(body, "\n")
	if maxLines := d.height - 2; lipgloss.Height(text) > maxLines && maxLines > 3 {
		lines := strings.Split(text, "\n")
		keep := append(lines[:maxLines-2:maxLines-2], s.Dim.Render(fmt.Sprintf("… %d more lines", len(lines)-maxLines+1)))
		text = strings.Join(append(keep, lines[len(lines)-1]), "\n")
	}
	return s.Dialog.Render(text)
}
