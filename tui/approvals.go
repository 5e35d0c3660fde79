package tui

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/agentledger/agentledger/approvals"
)

// approvalsShown is how many pending requests the approvals view loads a
// page: the first page the oldest, which have waited longest, each next
// one those after the last shown.
const approvalsShown = 500

// approvalsModel is the approvals view: the pending requests of every
// task, oldest first, one of them selected; enter opens it (the request
// page), with the call as it would be performed.
type approvalsModel struct {
	env *env
	cmd commands

	rows   []approvals.Request
	total  int64 // pending in all; rows holds a page of them
	cursor int
	offset int // the first row on screen
	loadedPage
	pages pager[approvals.Position]

	// The request open, or 0 for the list. request is nil until it
	// loaded (opened from the list, it starts as the row).
	openID  int64
	request *approvals.Request
	openErr error
}

func newApprovalsModel(e *env, c commands) approvalsModel {
	return approvalsModel{env: e, cmd: c, loadedPage: newLoadedPage(e)}
}

// load reads the list, or the request open.
func (m *approvalsModel) load() tea.Cmd {
	m.loading = true
	if m.openID != 0 {
		return m.cmd.approval(m.openID, false, false)
	}
	return m.cmd.pendingApprovals(m.pages.after, approvalsShown)
}

// refresh reloads unless a load is under way.
func (m *approvalsModel) refresh() tea.Cmd {
	if m.loading {
		return nil
	}
	return m.load()
}

func (m *approvalsModel) setSize(width, height int) {
	m.resize(width, height, "")
	m.page.Height = max(height, 1) // the request page has no totals line
	m.render()
}

// selected is the request under the cursor, or the one open.
func (m approvalsModel) selected() *approvals.Request {
	if m.openID != 0 {
		return m.request
	}
	if m.cursor < len(m.rows) {
		return &m.rows[m.cursor]
	}
	return nil
}

// open shows request r on its page.
func (m *approvalsModel) open(r approvals.Request) tea.Cmd {
	m.openID, m.request, m.openErr = r.ID, &r, nil
	m.page.GotoTop()
	m.render()
	return m.load()
}

// close goes back to the list.
func (m *approvalsModel) close() tea.Cmd {
	m.openID, m.request, m.openErr = 0, nil, nil
	m.render()
	return m.load()
}

// Update handles the loads, the cursor and the page's scrolling.
func (m approvalsModel) Update(msg tea.Msg) (approvalsModel, tea.Cmd) {
	switch msg := msg.(type) {
	case approvalsMsg:
		if m.openID != 0 || msg.after != m.pages.after { // another page's
			return m, nil
		}
		m.loading, m.err = false, msg.err
		if msg.err == nil {
			var at int64
			if r := m.selected(); r != nil {
				at = r.ID
			}
			m.rows, m.total, m.loaded = msg.requests, msg.total, true
			// The cursor stays on its request while it is listed.
			if i := slices.IndexFunc(m.rows, func(r approvals.Request) bool { return r.ID == at }); i >= 0 {
				m.cursor = i
			}
			m.cursor = max(min(m.cursor, len(m.rows)-1), 0)
			m.render()
		}
		return m, nil
	case approvalMsg:
		if msg.id != m.openID || msg.decide {
			return m, nil
		}
		m.loading, m.openErr = false, msg.err
		if msg.err == nil {
			m.request = &msg.request
			m.render()
		}
		return m, nil
	case tea.KeyMsg:
		if m.openID != 0 {
			return m, m.scroll(msg)
		}
		k := m.env.keys
		last := func() approvals.Position { return m.rows[len(m.rows)-1].Position() }
		if handled, turned := m.pages.key(k, msg, m.loaded && len(m.rows) == approvalsShown, last); handled {
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
func (m *approvalsModel) turn(turned bool) tea.Cmd {
	if !turned {
		return nil
	}
	m.rows, m.cursor, m.offset, m.loaded = nil, 0, 0, false
	return m.load()
}

// rowsShown is how many requests fit under the totals and the header:
// two lines each, unless every call fits beside its columns.
func (m approvalsModel) rowsShown() int {
	if _, wide := m.cells(); wide {
		return max(m.height-3, 1)
	}
	return max((m.height-3)/2, 1)
}

// cells are the list's header and rows, the call's one-line summary
// last; wide is whether every row fits the width whole, the call in a
// column of its own.
func (m approvalsModel) cells() (rows [][]string, wide bool) {
	now := m.env.now()
	rows = [][]string{{"ID", "TASK", "STEP", "WAITING", "EXPIRES", "APPROVERS", "CALL"}}
	for _, r := range m.rows {
		rows = append(rows, []string{strconv.FormatInt(r.ID, 10), strconv.FormatInt(r.TaskID, 10), r.Step,
			short(now.Sub(r.RequestedAt)), expiry(r.ExpiresAt, now), approvers(r), approvals.Summary(r)})
	}
	row := fitColumns(rows[0], rows[1:], 0, 0)
	for _, r := range rows {
		if ansi.StringWidth(row(r)) > m.width {
			return rows, false
		}
	}
	return rows, true
}

// render lays the list or the request out for the page.
func (m *approvalsModel) render() {
	if m.openID != 0 {
		if m.request != nil {
			m.page.SetContent(m.requestPage(*m.request))
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

// table is the list's header and the requests on screen, the selected
// one highlighted: on a wide screen a line each; else a line of columns,
// then the call's summary under it, whole on an 80-column screen.
func (m approvalsModel) table() []string {
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
		top, call := cut(row(rows[i][:len(header)]), m.width), cut("   "+rows[i][len(header)], m.width)
		if i == m.cursor {
			top, call = s.Cursor.Render(top), s.Cursor.Render(call)
		} else {
			call = s.Dim.Render(call)
		}
		lines = append(lines, top, call)
	}
	return lines
}

// View renders the totals and the list, or the request open.
func (m approvalsModel) View() string {
	s := m.env.styles
	if m.openID != 0 {
		if m.request == nil {
			msg := s.Dim.Render(fmt.Sprintf("loading approval request %d…", m.openID))
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
		totals = "no approval pending"
	default:
		totals = plural(int(m.total), "approval") + " pending, the longest waiting first"
	}
	if m.loaded || m.pages.note != "" {
		totals += m.pages.status(m.env.keys, len(m.rows), approvalsShown, m.total)
	}
	if m.err != nil {
		totals += " · " + s.Error.Render(m.err.Error())
	}
	lines := []string{cut(totals, m.width), ""}
	switch {
	case len(m.rows) > 0:
		lines = append(lines, m.table()...)
	case m.loaded:
		lines = append(lines, legend(s.Dim, "A gated effect asks here: a steps step's \"approve\", an agent's gated tool, "+
			"a Go tool or the policy that needs approval.", m.width))
	}
	return fit(strings.Join(lines, "\n"), m.width, m.height)
}

// approvers says who is asked to decide r, briefly: any approver when it
// names none.
func approvers(r approvals.Request) string {
	if len(r.Approvers) == 0 {
		return "any"
	}
	return strings.Join(r.Approvers, ",")
}
