package tui

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/table"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/render"
)

// column is one column of the task table.
type column struct {
	title string
	width int
	cell  func(e *env, t *agentledger.Task) string
}

// Column widths. STATE is fixed ("needs_attention"); ID, TENANT, QUEUE,
// KIND and TRY are as wide as their widest cell, a name at most nameWidth;
// DETAIL takes the rest.
const (
	stateWidth = 15
	nameWidth  = 10
	// wantErr is what DETAIL should get: below it the least important
	// columns give way (see dropOrder), since a cut error says nothing.
	wantErr = 40
	minErr  = 10
)

// dropOrder names the columns a narrow table gives up, least important
// first: the error, the state and the id stay.
var dropOrder = []string{"TENANT", "QUEUE", "UPDATED", "TRY", "KIND"}

// columnsFor lays the table out for width and the rows it shows.
func columnsFor(e *env, width int, rows []*agentledger.Task) []column {
	cols := []column{
		{"ID", 0, func(_ *env, t *agentledger.Task) string { return strconv.FormatInt(t.ID, 10) }},
		{"STATE", stateWidth, func(_ *env, t *agentledger.Task) string { return string(t.State) }},
		{"TENANT", 0, func(_ *env, t *agentledger.Task) string { return t.Tenant }},
		{"QUEUE", 0, func(_ *env, t *agentledger.Task) string { return t.Queue }},
		{"KIND", 0, func(_ *env, t *agentledger.Task) string { return t.Kind }},
		{"TRY", 0, func(_ *env, t *agentledger.Task) string { return render.Tries(t) }},
		{"UPDATED", 0, func(e *env, t *agentledger.Task) string { return short(e.now().Sub(t.UpdatedAt)) }},
		{"DETAIL", 0, func(_ *env, t *agentledger.Task) string { return lastErrorCell(t) }},
	}
	for i := range cols[:len(cols)-1] {
		c := &cols[i]
		if c.width > 0 {
			continue
		}
		c.width = ansi.StringWidth(c.title)
		for _, t := range rows {
			c.width = max(c.width, ansi.StringWidth(c.cell(e, t)))
		}
		if c.title != "ID" && c.title != "TRY" {
			c.width = min(c.width, nameWidth)
		}
	}
	used := func() int {
		n := 0
		for _, c := range cols[:len(cols)-1] {
			n += c.width + 1 // the cell's padding
		}
		return n
	}
	for _, drop := range dropOrder {
		if width-used()-1 >= wantErr {
			break
		}
		cols = slices.DeleteFunc(cols, func(c column) bool { return c.title == drop })
	}
	cols[len(cols)-1].width = max(width-used()-1, minErr)
	return cols
}

// layout sizes the table for the model's width and height.
func (m *tasksModel) layout() {
	m.cols = columnsFor(m.env, m.width, m.shown)
	tc := make([]table.Column, len(m.cols))
	for i, c := range m.cols {
		tc[i] = table.Column{Title: c.title, Width: c.width}
	}
	if len(tc) != len(m.table.Columns()) {
		m.table.SetRows(nil) // rows must match the new columns
	}
	m.table.SetColumns(tc)
	m.table.SetWidth(m.width)
	m.table.SetHeight(m.tableHeight())
	moveTo(&m.table, m.table.Cursor()) // a new height can leave it off the screen
}

// moveTo puts the table's cursor on row i with that row on the screen.
// The table's SetCursor moves the cursor but not the scrolled window (a
// cursor set to 0 after G showed the page's last rows, none selected), so
// it goes to the top and moves down, which scrolls.
func moveTo(t *table.Model, i int) {
	t.GotoTop()
	if i > 0 {
		t.MoveDown(i)
	}
}

// tableHeight is what the table gets: all but the counts, the info line
// and the input lines.
func (m tasksModel) tableHeight() int {
	input := 1
	if m.filtering {
		input = lipgloss.Height(m.form.View()) // the form and its hint
	}
	return max(m.height-2-input, 2)
}

// row is a task as the table shows it.
func (m *tasksModel) row(t *agentledger.Task) table.Row {
	r := make(table.Row, len(m.cols))
	for i, c := range m.cols {
		r[i] = oneLine(c.cell(m.env, t))
	}
	return r
}

// setSize gives the table its share of the screen.
func (m *tasksModel) setSize(width, height int) {
	m.width, m.height = width, height
	m.search.Width = max(width-4, 10)
	m.form.setWidth(width)
	m.apply()
}

// View renders the counts, the filter line, the table and the input line.
func (m tasksModel) View() string {
	var b strings.Builder
	b.WriteString(cut(m.countsLine(), m.width) + "\n")
	b.WriteString(cut(m.infoLine(), m.width) + "\n")
	body := m.colourStates(m.table.View())
	if m.loaded && len(m.shown) == 0 {
		// esc clears a search (typing F would only search for it); F
		// clears the filters.
		none := "  no tasks match"
		switch searched, filtered := m.search.Value() != "", m.filter != (Filter{}); {
		case searched && filtered:
			none += " on this page (esc clears the search, F the filters)"
		case searched:
			none += " the search on this page (esc clears it)"
		case filtered:
			none += " (F clears the filters)"
		}
		body = strings.SplitN(body, "\n", 2)[0] + "\n" + m.env.styles.Dim.Render(none)
	}
	b.WriteString(fit(body, m.width, m.tableHeight()) + "\n")
	b.WriteString(fit(m.inputLine(), m.width, m.height-2-m.tableHeight()))
	return b.String()
}

// countsLine is how many tasks of the filter are in each state; the state
// filtered on is in brackets.
func (m tasksModel) countsLine() string {
	labels := map[agentledger.TaskState]string{agentledger.StateNeedsAttention: "attention"}
	shortLabels := map[agentledger.TaskState]string{
		agentledger.StateQueued: "q", agentledger.StateWaiting: "wait", agentledger.StateRunning: "run", agentledger.StateRetrying: "retry",
		agentledger.StateSucceeded: "ok", agentledger.StateDead: "dead", agentledger.StateCancelled: "cxl",
		agentledger.StateNeedsAttention: "attn", agentledger.StateCompensating: "undo", agentledger.StateCompensated: "undone",
	}
	render := func(labels map[agentledger.TaskState]string, count func(int64) string, sep string) string {
		var total int64
		parts := make([]string, 0, len(agentledger.TaskStates)+1)
		for _, st := range agentledger.TaskStates {
			n := m.counts[st]
			if n == 0 && st != m.filter.State && rare(st) {
				continue
			}
			total += n
			label := labels[st]
			if label == "" {
				label = string(st)
			}
			part := m.env.styles.StateStyle(st).Render(label) + " " + count(n)
			if st == m.filter.State {
				part = "[" + part + "]"
			}
			parts = append(parts, part)
		}
		all := "all " + count(total)
		if m.filter.State == "" {
			all = "[" + all + "]"
		}
		return strings.Join(append([]string{all}, parts...), sep)
	}
	exact := func(n int64) string { return strconv.FormatInt(n, 10) }
	line := render(labels, exact, "  ")
	if ansi.StringWidth(line) > m.width {
		line = render(shortLabels, exact, "  ")
	}
	if ansi.StringWidth(line) > m.width {
		// Six-digit counts: each said to three figures, one space apart,
		// so that every state (and the one filtered on) stays on the line.
		line = render(shortLabels, compactCount, " ")
	}
	return line
}

// compactCount is n to about three figures: 952, 9.9k, 208k, 1.2M.
func compactCount(n int64) string {
	switch {
	case n < 1000:
		return strconv.FormatInt(n, 10)
	case n < 10_000:
		return fmt.Sprintf("%d.%dk", n/1000, n%1000/100) // rounded down: never more than there are
	case n < 1_000_000:
		return strconv.FormatInt(n/1000, 10) + "k"
	}
	return fmt.Sprintf("%d.%dM", n/1_000_000, n%1_000_000/100_000)
}

// rare reports whether st is a state only sagas reach: the counts line
// shows it only when a task is in it (or the filter names it), so that it
// fits the width it fitted before sagas.
func rare(st agentledger.TaskState) bool {
	return st == agentledger.StateCompensating || st == agentledger.StateCompensated
}

// infoLine says what is listed: the filter, the order and the page.
func (m tasksModel) infoLine() string {
	s := m.env.styles
	filter := m.filter.String()
	if filter == "" {
		filter = "all tasks"
	} else {
		filter += s.Dim.Render(" (F clears)")
	}
	sort := m.sort.String()
	if m.sort != sortID {
		sort += " (this page)" // pages are loaded newest first; a sort orders the one shown
	}
	parts := []string{s.Label.Render("filter ") + filter, s.Label.Render("sort ") + sort,
		s.Label.Render("page ") + strconv.Itoa(len(m.back)+1)}
	rows := plural(len(m.rows), "task")
	if len(m.shown) != len(m.rows) {
		rows = fmt.Sprintf("%d of %s", len(m.shown), plural(len(m.rows), "task"))
	}
	if len(m.rows) == m.env.opts.PageSize && !m.end {
		rows += ", more: n"
	}
	if m.stale || !m.loaded {
		rows = "loading…"
	}
	return strings.Join(append(parts, rows), s.Dim.Render(" · "))
}

// inputLine is the search input, the filter form or a reminder of them.
func (m tasksModel) inputLine() string {
	switch {
	case m.filtering:
		return m.form.View()
	case m.searching || m.search.Value() != "":
		return m.search.View()
	}
	hint := "/ search the page · f filter by state, queue, kind, tenant · s cycle the state · F clear filters"
	if ansi.StringWidth(hint) > m.width {
		hint = "/ search · f filter · s state · F clear filters"
	}
	return m.env.styles.Dim.Render(hint)
}

// colourStates colours the STATE cells of a rendered table. The table
// counts the bytes of escape sequences as cells, so colour cannot go into
// its rows; it is put on afterwards, on every line but the header and the
// selected row (which already carry styles).
func (m tasksModel) colourStates(view string) string {
	lines := strings.Split(view, "\n")
	from := m.cols[0].width + 1 // after ID
	to := from + stateWidth
	for i := 1; i < len(lines); i++ {
		l := lines[i]
		if strings.Contains(l, "\x1b") || ansi.StringWidth(l) < to {
			continue
		}
		cell := ansi.Cut(l, from, to)
		st := agentledger.TaskState(strings.TrimSpace(cell))
		if !st.Valid() {
			continue
		}
		lines[i] = ansi.Cut(l, 0, from) + m.env.styles.StateStyle(st).Render(cell) + ansi.Cut(l, to, ansi.StringWidth(l))
	}
	return strings.Join(lines, "\n")
}
