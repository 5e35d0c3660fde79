package tui

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/agentledger/agentledger/waits"
)

// newPayloadDialog is a confirmation that y alone confirms, of an action
// (send a signal) that carries a JSON payload, {} unless the operator
// gives one: p opens its input, where enter checks it. dropNote is the
// status if a cancel drops a payload given.
func newPayloadDialog(e *env, title, verb, dropNote string, lines []string, confirm func(payload json.RawMessage) tea.Cmd) *dialogModel {
	in := newInput("payload: ", "a JSON document; empty is {}")
	in.CharLimit = waits.MaxPayload
	return &dialogModel{env: e, title: title, lines: lines, danger: true, payload: true, accepted: "{}", verb: verb,
		dropNote: dropNote, note: in,
		confirm: func(payload string, _ bool) tea.Cmd { return confirm(json.RawMessage(payload)) }}
}

// updatePayload is Update for a dialog with a payload. Only y confirms,
// from the preview, with the payload accepted there; enter in the input
// checks what was typed and, if it is JSON, takes it back to the preview,
// so that the payload sent is the one shown. A stray key never sends.
func (d dialogModel) updatePayload(msg tea.KeyMsg) (dialogModel, tea.Cmd) {
	k := d.env.keys
	if d.editing {
		switch {
		case key.Matches(msg, k.Back):
			d.editing, d.problem = false, ""
			d.note.SetValue(d.accepted)
			d.note.Blur()
			return d, nil
		case key.Matches(msg, k.Apply):
			payload, err := checkPayload(d.note.Value())
			if err != nil {
				d.problem = err.Error()
				return d, nil
			}
			d.accepted, d.editing, d.problem = payload, false, ""
			d.note.SetValue(payload)
			d.note.Blur()
			return d, nil
		}
		var cmd tea.Cmd
		d.note, cmd = d.note.Update(msg)
		d.problem = ""
		return d, cmd
	}
	switch {
	case key.Matches(msg, k.ConfirmKey):
		d.closed = true
		return d, d.confirm(d.accepted, false)
	case key.Matches(msg, k.Confirm):
		d.problem = "press y to " + d.verb + ": it cannot be taken back"
	case key.Matches(msg, k.Payload):
		d.editing, d.problem = true, ""
		d.note.SetValue(d.accepted)
		if d.accepted == "{}" { // the default: typing starts the payload, not after it
			d.note.SetValue("")
		}
		d.note.CursorEnd()
		return d, d.note.Focus()
	case key.Matches(msg, k.Deny):
		d.closed, d.dropped = true, d.accepted != "{}"
	}
	return d, nil
}

// checkPayload checks a payload typed: JSON (empty is {}) of at most
// waits.MaxPayload bytes. It returns it compacted, as the preview shows
// it.
func checkPayload(text string) (string, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return "{}", nil
	}
	if len(text) > waits.MaxPayload {
		return "", fmt.Errorf("the payload is %d bytes; a signal's is at most %d", len(text), waits.MaxPayload)
	}
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			return "", fmt.Errorf("the payload is not JSON: %v (at byte %d); fix it, or esc", err, syntax.Offset)
		}
		return "", fmt.Errorf("the payload is not JSON: %v; fix it, or esc", err)
	}
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(text)); err != nil {
		return "", fmt.Errorf("the payload is not JSON: %v", err)
	}
	return b.String(), nil
}

// payloadView is the payload's lines in the dialog: the input while it
// takes the keys, else the payload accepted.
func (d dialogModel) payloadView() []string {
	s := d.env.styles
	var lines []string
	if d.editing {
		lines = append(lines, d.note.View())
	} else {
		lines = append(lines, cut("payload: "+d.accepted, d.innerWidth()))
	}
	if d.problem != "" {
		lines = append(lines, s.Error.Width(d.innerWidth()).Render(d.problem))
	}
	return lines
}
