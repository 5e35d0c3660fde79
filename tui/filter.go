package tui

import (
	"fmt"
	"slices"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/agentledger/agentledger"
)

// Fields of the filter form.
const (
	fieldState = iota
	fieldQueue
	fieldKind
	fieldTenant
	fields // how many there are
)

// fieldNames name the form's fields, in order.
var fieldNames = [fields]string{"state", "queue", "kind", "tenant"}

// filterForm edits the filter on one line, with a line below it saying
// what the focused field accepts (or why the form was refused).
type filterForm struct {
	inputs [fields]textinput.Model
	at     int
	// known are the values of each field seen on the page and announced
	// by the workers, offered as hints.
	known  [fields][]string
	err    error
	width  int
	keys   *KeyMap
	styles *Styles
}

func newFilterForm(e *env, f Filter, known [fields][]string) filterForm {
	m := filterForm{keys: &e.keys, styles: &e.styles, known: known}
	for i, v := range [fields]string{string(f.State), f.Queue, f.Kind, f.Tenant} {
		m.inputs[i] = newInput(fieldNames[i]+": ", "any")
		m.inputs[i].SetValue(v)
		m.inputs[i].Width = 14
	}
	return m
}

// focus puts the cursor in the first field.
func (m *filterForm) focus() tea.Cmd {
	m.at = 0
	return m.inputs[0].Focus()
}

// setWidth shares width between the fields.
func (m *filterForm) setWidth(width int) {
	m.width = width
	w := max((width-40)/fields, 6)
	for i := range m.inputs {
		// textinput fits its placeholder, prompt included, in Width:
		// "tenant: any" would read "tenant: a…".
		m.inputs[i].Width = max(w, len(m.inputs[i].Prompt)+len(m.inputs[i].Placeholder))
	}
}

// filter is the filter the form holds, or why it cannot be applied.
func (m filterForm) filter() (Filter, error) {
	v := func(i int) string { return strings.TrimSpace(m.inputs[i].Value()) }
	f := Filter{State: agentledger.TaskState(v(fieldState)), Queue: v(fieldQueue), Kind: v(fieldKind), Tenant: v(fieldTenant)}
	return f, f.validate()
}

// validate refuses a filter no task can match: an unknown state, or a
// name claims would never accept.
func (f Filter) validate() error {
	if f.State != "" && !f.State.Valid() {
		return fmt.Errorf("unknown state %q: use %s", f.State, agentledger.OneOf(agentledger.TaskStates))
	}
	for _, kv := range [][2]string{{"queue", f.Queue}, {"kind", f.Kind}, {"tenant", f.Tenant}} {
		if kv[1] != "" && !agentledger.ValidName(kv[1]) {
			return fmt.Errorf("%s %q cannot exist: names are 1-128 letters, digits, '.', '_', ':' or '-'", kv[0], kv[1])
		}
	}
	return nil
}

// Update moves between fields and types into the focused one.
func (m filterForm) Update(msg tea.KeyMsg) (filterForm, tea.Cmd) {
	if key.Matches(msg, m.keys.NextField) {
		m.inputs[m.at].Blur()
		step := 1
		if msg.String() == "shift+tab" {
			step = len(m.inputs) - 1
		}
		m.at = (m.at + step) % len(m.inputs)
		return m, m.inputs[m.at].Focus()
	}
	var cmd tea.Cmd
	m.inputs[m.at], cmd = m.inputs[m.at].Update(msg)
	m.err = nil
	return m, cmd
}

// View renders the fields side by side, and below them the values the
// focused field takes, or the error that refused the form, wrapped to the
// width.
func (m filterForm) View() string {
	parts := make([]string, len(m.inputs))
	for i := range m.inputs {
		parts[i] = m.inputs[i].View()
	}
	return strings.Join(parts, "  ") + "\n" + m.hint()
}

// hint says what the focused field takes.
func (m filterForm) hint() string {
	if m.err != nil {
		return m.styles.Error.Width(max(m.width, 20)).Render(m.err.Error())
	}
	name := fieldNames[m.at]
	var text string
	switch {
	case m.at == fieldState:
		text = "state: one of " + agentledger.OneOf(agentledger.TaskStates) + "; empty: any"
	case len(m.known[m.at]) > 0:
		text = fmt.Sprintf("%s: seen %s; empty: any", name, strings.Join(m.known[m.at], ", "))
	default:
		text = name + ": a name (letters, digits, . _ : -); empty: any"
	}
	return m.styles.Dim.Width(max(m.width, 20)).Render(text)
}

// knownValues are the sorted distinct non-empty values of vals.
func knownValues(vals ...[]string) []string {
	var out []string
	for _, vs := range vals {
		for _, v := range vs {
			if v != "" && !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	slices.Sort(out)
	return out
}
