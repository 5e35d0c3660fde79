package tui

import (
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
)

// filterForm edits the queue, kind and tenant of the filter on one line;
// the state is cycled with its own key.
type filterForm struct {
	inputs [3]textinput.Model // queue, kind, tenant
	at     int
	keys   *KeyMap
}

func newFilterForm(keys *KeyMap, f Filter) filterForm {
	m := filterForm{keys: keys}
	for i, v := range []struct{ prompt, value string }{{"queue: ", f.Queue}, {"kind: ", f.Kind}, {"tenant: ", f.Tenant}} {
		m.inputs[i] = newInput(v.prompt, "any")
		m.inputs[i].SetValue(v.value)
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
	w := max((width-30)/3, 6)
	for i := range m.inputs {
		m.inputs[i].Width = w
	}
}

// filter is the filter the form holds (its state is left empty).
func (m filterForm) filter() Filter {
	v := func(i int) string { return strings.TrimSpace(m.inputs[i].Value()) }
	return Filter{Queue: v(0), Kind: v(1), Tenant: v(2)}
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
	return m, cmd
}

// View renders the fields side by side.
func (m filterForm) View() string {
	parts := make([]string, len(m.inputs))
	for i := range m.inputs {
		parts[i] = m.inputs[i].View()
	}
	return strings.Join(parts, "  ")
}
