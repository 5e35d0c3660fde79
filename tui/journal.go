package tui

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/agentledger/agentledger/operator"
	"github.com/agentledger/agentledger/render"
)

// journalModel is the journal tab: the effects in the order they were
// intended, one row each, a row expanded on demand to its full result.
type journalModel struct {
	env      *env
	entries  []operator.Effect
	cursor   int
	expanded map[string]bool // by ledger key
	offset   int             // first line shown
	width    int
	height   int
}

func newJournalModel(e *env) journalModel {
	return journalModel{env: e, expanded: map[string]bool{}}
}

// set replaces the entries, keeping the cursor on the same effect.
func (m *journalModel) set(entries []operator.Effect) {
	var keep string
	if e, ok := m.selected(); ok {
		keep = e.Key
	}
	m.entries = entries
	m.cursor = min(m.cursor, max(len(entries)-1, 0))
	for i, e := range entries {
		if e.Key == keep {
			m.cursor = i
		}
	}
	m.follow()
}

func (m *journalModel) setSize(width, height int) {
	m.width, m.height = width, height
	m.follow()
}

// selected is the effect under the cursor.
func (m journalModel) selected() (operator.Effect, bool) {
	if m.cursor < 0 || m.cursor >= len(m.entries) {
		return operator.Effect{}, false
	}
	return m.entries[m.cursor], true
}

// Update moves the cursor and expands rows.
func (m journalModel) Update(msg tea.KeyMsg) journalModel {
	k := m.env.keys
	switch {
	case key.Matches(msg, k.Up):
		m.cursor = max(m.cursor-1, 0)
	case key.Matches(msg, k.Down):
		m.cursor = min(m.cursor+1, max(len(m.entries)-1, 0))
	case key.Matches(msg, k.PageUp):
		m.cursor = max(m.cursor-m.height/2, 0)
	case key.Matches(msg, k.PageDown):
		m.cursor = min(m.cursor+m.height/2, max(len(m.entries)-1, 0))
	case key.Matches(msg, k.Top):
		m.cursor = 0
	case key.Matches(msg, k.Bottom):
		m.cursor = max(len(m.entries)-1, 0)
	case key.Matches(msg, k.Expand):
		if e, ok := m.selected(); ok {
			m.expanded[e.Key] = !m.expanded[e.Key]
		}
	}
	m.follow()
	return m
}

// rows is how many lines the view has for rows, below its header.
func (m journalModel) rows() int { return max(m.height-1, 1) }

// lineOf is the line the row of entry i starts on.
func (m journalModel) lineOf(i int) int {
	n := 0
	for _, e := range m.entries[:i] {
		n++
		if m.expanded[e.Key] {
			n += len(m.expansion(e))
		}
	}
	return n
}

// follow scrolls so that the cursor's row, and as much of its expansion
// as fits, is in view.
func (m *journalModel) follow() {
	if len(m.entries) == 0 {
		m.offset = 0
		return
	}
	first := m.lineOf(m.cursor)
	last := first
	if e := m.entries[m.cursor]; m.expanded[e.Key] {
		last = min(first+len(m.expansion(e)), first+m.rows()-1)
	}
	if last >= m.offset+m.rows() {
		m.offset = last - m.rows() + 1
	}
	m.offset = min(m.offset, first)
}

// View renders the header and the rows around the cursor. STEP,
// OPERATION, CLASS, STATE and KEY are as wide as their widest cell (a step
// is what a resolve names); RESULT takes the rest, and when that is under
// 20 cells KEY gives way (the expansion shows it), then CLASS.
func (m journalModel) View() string {
	s := m.env.styles
	if len(m.entries) == 0 {
		return s.Dim.Render("no effects recorded in this generation")
	}
	header := []string{"STEP", "OPERATION", "CLASS", "STATE", "KEY", "RESULT"}
	rows := make([][]string, len(m.entries))
	for i, e := range m.entries {
		rows[i] = []string{e.Step, e.Operation, string(e.Class), string(e.State), shortKey(e.Key), render.Summary(e, 0)}
	}
	keep := fitColumns(header, rows, m.width-2, 20, "KEY", "CLASS")
	// The hint stands in for enter in the help line, which is full.
	head := cut("  "+s.Bold.Render(keep(header))+s.Dim.Render("  (enter expands a row)"), m.width)
	var lines []string
	for i, e := range m.entries {
		mark := "  "
		if i == m.cursor {
			mark = "> "
		}
		r := rows[i]
		r[3] = s.Effect(e.State) // styled after sizing: the width is the text's
		row := keep(r)
		if i == m.cursor {
			row = s.Cursor.Render(row)
		}
		lines = append(lines, cut(mark+row, m.width))
		if m.expanded[e.Key] {
			for _, l := range m.expansion(e) {
				lines = append(lines, cut("      "+l, m.width))
			}
		}
	}
	offset := min(m.offset, max(len(lines)-1, 0))
	end := min(offset+m.rows(), len(lines))
	return head + "\n" + strings.Join(lines[offset:end], "\n")
}

// expansion is expansion(e) wrapped to the view's width below its indent:
// an error or a result is read whole, not cut at the edge.
func (m journalModel) expansion(e operator.Effect) []string {
	var out []string
	for _, l := range expansion(e) {
		body := strings.TrimLeft(l, " ")
		indent := l[:len(l)-len(body)] // a wrapped line keeps its own
		for _, w := range strings.Split(ansi.Wrap(body, max(m.width-6-len(indent), 10), ""), "\n") {
			out = append(out, indent+w)
		}
	}
	return out
}

// expansion is everything the journal holds about an effect.
func expansion(e operator.Effect) []string {
	lines := []string{
		"key: " + e.Key,
		fmt.Sprintf("performed %d time(s), fencing token %d", e.Performed, e.OwnerToken),
	}
	if e.Status != 0 {
		lines = append(lines, "status: "+strconv.Itoa(e.Status))
	}
	if e.ExternalRef != "" {
		lines = append(lines, "ref: "+e.ExternalRef)
	}
	if e.Note != "" {
		lines = append(lines, "note: "+e.Note)
	}
	if e.Error != "" {
		lines = append(lines, "error:")
		for _, l := range strings.Split(e.Error, "\n") {
			lines = append(lines, "  "+l)
		}
	}
	if len(e.Result) > 0 {
		lines = append(lines, "result:")
		for _, l := range strings.Split(prettyJSON(e.Result), "\n") {
			lines = append(lines, "  "+l)
		}
	}
	return lines
}
