package tui

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/agentledger/agentledger/waits"
)

// waitsShown is how many waiting waits the waits view loads a page: the
// first page those due soonest, each next one those after the last shown.
const waitsShown = 500

// waitsModel is the waits view: the waiting waits of every task, the
// soonest deadline first, one of them selected; enter opens it (the wait's
// page).
type waitsModel struct {
	env *env
	cmd commands

	rows   []Wait
	total  int64 // waiting in all; rows holds a page of them
	cursor int
	offset int // the first row on screen
	loadedPage
	pages pager[waits.Position]

	// The wait open, or 0 for the list. wait is nil until it loaded
	// (opened from the list, it starts as the row).
	openID  int64
	wait    *Wait
	openErr error
}

func newWaitsModel(e *env, c commands) waitsModel {
	return waitsModel{env: e, cmd: c, loadedPage: newLoadedPage(e)}
}

// load reads the list, or the wait open.
func (m *waitsModel) load() tea.Cmd {
	m.loading = true
	if m.openID != 0 {
		return m.cmd.wait(m.openID, waitShow)
	}
	return m.cmd.waiting(m.pages.after, waitsShown)
}

// refresh reloads unless a load is under way.
func (m *waitsModel) refresh() tea.Cmd {
	if m.loading {
		return nil
	}
	return m.load()
}

func (m *waitsModel) setSize(width, height int) {
	m.resize(width, height, "")
	m.page.Height = max(height, 1) // the wait's page has no totals line
	m.render()
}

// selected is the wait under the cursor, or the one open.
func (m waitsModel) selected() *Wait {
	if m.openID != 0 {
		return m.wait
	}
	if m.cursor < len(m.rows) {
		return &m.rows[m.cursor]
	}
	return nil
}

// open shows wait w on its page.
func (m *waitsModel) open(w Wait) tea.Cmd {
	m.openID, m.wait, m.openErr = w.ID, &w, nil
	m.page.GotoTop()
	m.render()
	return m.load()
}

// close goes back to the list.
func (m *waitsModel) close() tea.Cmd {
	m.openID, m.wait, m.openErr = 0, nil, nil
	m.render()
	return m.load()
}

// Update handles the loads, the cursor and the page's scrolling.
func (m waitsModel) Update(msg tea.Msg) (waitsModel, tea.Cmd) {
	switch msg := msg.(type) {
	case waitsMsg:
		if m.openID != 0 || msg.after != m.pages.after { // another page's
			return m, nil
		}
		m.loading, m.err = false, msg.err
		if msg.err == nil {
			var at int64
			if w := m.selected(); w != nil {
				at = w.ID
			}
			m.rows, m.total, m.loaded = msg.waits, msg.total, true
			// The cursor stays on its wait while it is listed.
			if i := slices.IndexFunc(m.rows, func(w Wait) bool { return w.ID == at }); i >= 0 {
				m.cursor = i
			}
			m.cursor = max(min(m.cursor, len(m.rows)-1), 0)
			m.render()
		}
		return m, nil
	case waitMsg:
		if msg.id != m.openID || msg.act != waitShow {
			return m, nil
		}
		m.loading, m.openErr = false, msg.err
		if msg.err == nil {
			m.wait = &msg.wait
			m.render()
		}
		return m, nil
	case tea.KeyMsg:
		if m.openID != 0 {
			return m, m.scroll(msg)
		}
		k := m.env.keys
		last := func() waits.Position { return m.rows[len(m.rows)-1].Position() }
		if handled, turned := m.pages.key(k, msg, m.loaded && len(m.rows) == waitsShown, last); handled {
			cmd := m.turn(turned) // before m is returned: turn changes it
			return m, cmd
		}
		switch {
		case key.Matches(msg, k.Up):
			m.cursor--
		case key.Matches(msg, k.Down):
			m.cursor++
		case key.Matches(msg, k.PageUp):
			m.cursor -= m.rowsShown()
		case key.Matches(msg, k.PageDown):
			m.cursor += m.rowsShown()
		case key.Matches(msg, k.Top):
			m.cursor = 0
		case key.Matches(msg, k.Bottom):
			m.cursor = len(m.rows) - 1
		}
		m.cursor = max(min(m.cursor, len(m.rows)-1), 0)
		m.render()
	}
	return m, nil
}

// turn, when the page turned, shows the page m.pages is on, from its
// first row, once loaded.
func (m *waitsModel) turn(turned bool) tea.Cmd {
	if !turned {
		return nil
	}
	m.rows, m.cursor, m.offset, m.loaded = nil, 0, 0, false
	return m.load()
}

// rowsShown is how many waits fit under the totals and the header: two
// lines each, unless every row fits whole on one.
func (m waitsModel) rowsShown() int {
	if _, wide := m.cells(); wide {
		return max(m.height-3, 1)
	}
	return max((m.height-3)/2, 1)
}

// cells are the list's header and rows, what each waits for last; wide
// is whether every row fits the width whole, that in a column of its own.
func (m waitsModel) cells() (rows [][]string, wide bool) {
	e := m.env
	now := e.now()
	rows = [][]string{{"ID", "TASK", "TENANT", "KIND", "WAITING", "DEADLINE", "WAITS FOR"}}
	for _, w := range m.rows {
		rows = append(rows, []string{strconv.FormatInt(w.ID, 10), strconv.FormatInt(w.TaskID, 10), w.Tenant, w.Kind,
			short(now.Sub(w.CreatedAt)), e.at(w.Deadline), waitTarget(e, w)})
	}
	row := fitColumns(rows[0], rows[1:], 0, 0)
	for _, r := range rows {
		if ansi.StringWidth(row(r)) > m.width {
			return rows, false
		}
	}
	return rows, true
}

// render lays the list or the wait out for the page.
func (m *waitsModel) render() {
	if m.openID != 0 {
		if m.wait != nil {
			m.page.SetContent(m.waitPage(*m.wait))
		}
		return
	}
	// The cursor's row stays on screen, and the screen stays full: rows
	// that ended elsewhere do not leave the ones above them scrolled off.
	n := m.rowsShown()
	m.offset = max(min(m.offset, m.cursor, len(m.rows)-n), 0)
	if m.cursor >= m.offset+n {
		m.offset = m.cursor - n + 1
	}
}

// table is the list's header and the waits on screen, the selected one
// highlighted: on a wide screen a line each; else a line of columns, then
// what it waits for under it.
func (m waitsModel) table() []string {
	s := m.env.styles
	rows, wide := m.cells()
	header, rows := rows[0], rows[1:]
	if !wide {
		header = header[:len(header)-1]
	}
	row := fitColumns(header, rows, 0, 0)
	lines := []string{s.Bold.Render(row(header))}
	end := min(m.offset+m.rowsShown(), len(rows))
	for i := m.offset; i < end; i++ {
		if wide {
			l := row(rows[i])
			if i == m.cursor {
				l = s.Cursor.Render(l)
			}
			lines = append(lines, l)
			continue
		}
		top, what := cut(row(rows[i][:len(header)]), m.width), cut("   "+rows[i][len(header)], m.width)
		if i == m.cursor {
			top, what = s.Cursor.Render(top), s.Cursor.Render(what)
		} else {
			what = s.Dim.Render(what)
		}
		lines = append(lines, top, what)
	}
	return lines
}

// View renders the totals and the list, or the wait open.
func (m waitsModel) View() string {
	s := m.env.styles
	if m.openID != 0 {
		if m.wait == nil {
			msg := s.Dim.Render(fmt.Sprintf("loading wait %d…", m.openID))
			if m.openErr != nil {
				msg = s.Error.Render(m.openErr.Error())
			}
			return fit(msg, m.width, m.height)
		}
		return fit(m.page.View(), m.width, m.height)
	}
	var totals string
	switch {
	case !m.loaded:
		totals = "loading…"
	case m.total == 0:
		totals = "no task waits"
	default:
		totals = plural(int(m.total), "wait") + ", the soonest deadline first"
	}
	if m.loaded || m.pages.note != "" {
		totals += m.pages.status(m.env.keys, len(m.rows), waitsShown, m.total)
	}
	if m.err != nil {
		totals += " · " + s.Error.Render(m.err.Error())
	}
	lines := []string{cut(totals, m.width), ""}
	switch {
	case len(m.rows) > 0:
		lines = append(lines, m.table()...)
	case m.loaded:
		lines = append(lines, legend(s.Dim, "A task waits here when a step, an agent's tool or a Go call waits for a signal "+
			"(wait_for_signal), a timer (wait_timer) or its child tasks (wait_for_children).", m.width))
	}
	return fit(strings.Join(lines, "\n"), m.width, m.height)
}

// waitTarget is what w waits for, for the list: the signal's name and
// key, the timer's due time, or how many of the children ended and how
// they end the wait.
func waitTarget(e *env, w Wait) string {
	switch w.Kind {
	case waits.KindSignal:
		return w.Signal + " key " + w.Key
	case waits.KindTimer:
		return "due " + e.stamp(w.Deadline)
	}
	return fmt.Sprintf("%d of %d ended · %s", w.Ended, w.Children, childrenRule(w.Spec))
}
