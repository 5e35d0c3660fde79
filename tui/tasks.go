package tui

import (
	"fmt"

	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/table"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/operator"
)

// tasksModel is the task table: one page of the filter at a time, found by
// an id cursor, so that a table of any size loads only a page.
type tasksModel struct {
	env *env
	cmd commands

	table table.Model
	cols  []column
	// input is the search query, or, while the filter form is open, that.
	search    textinput.Model
	searching bool
	form      filterForm
	filtering bool

	filter Filter
	// workerQueues and workerKinds are what the workers announced: hints
	// of the filter form.
	workerQueues, workerKinds []string
	before                    int64   // cursor of this page: ids below it (0: the newest)
	back                      []int64 // cursors of the pages before this one
	sort                      sortKey

	rows   []*agentledger.Task // the page as loaded, newest first
	shown  []*agentledger.Task // rows searched and sorted, as the table has them
	counts map[agentledger.TaskState]int64
	loaded bool
	// stale is set while the rows are of another filter or page than the
	// one asked for.
	stale bool
	// forward is the load that the next-page key started: if its page is
	// empty, this page was the last (it was full) and the view stays on
	// it, its cursor back at row forwardRow.
	forward, forwardRow int
	// end is set once the page after this one was found empty.
	end bool
	// note is what a key that did nothing says for the status line; App
	// takes it after each Update.
	note string

	seq     int // the latest load; older answers are dropped
	pending int // answers of the latest load still to come
	err     error

	width, height int
}

func newTasksModel(e *env, c commands) tasksModel {
	t := table.New(table.WithStyles(e.styles.Table), table.WithFocused(true), table.WithKeyMap(table.KeyMap{
		LineUp: e.keys.Up, LineDown: e.keys.Down, PageUp: e.keys.PageUp, PageDown: e.keys.PageDown,
		GotoTop: e.keys.Top, GotoBottom: e.keys.Bottom,
	}))
	return tasksModel{env: e, cmd: c, table: t, search: newInput("/ ", "search this page"),
		filter: e.opts.Filter}
}

// newInput is a one-line text input with a steady cursor.
func newInput(prompt, placeholder string) textinput.Model {
	in := textinput.New()
	in.Prompt = prompt
	in.Placeholder = placeholder
	in.CharLimit = 200
	_ = in.Cursor.SetMode(cursor.CursorStatic) // no blinking: no timed redraws
	return in
}

// load reloads the current page and the counts.
func (m *tasksModel) load() tea.Cmd {
	m.seq++
	m.pending = 2
	counts := m.filter
	counts.State = "" // the header counts every state
	return tea.Batch(
		m.cmd.page(m.seq, m.filter, m.before, m.env.opts.PageSize),
		m.cmd.counts(m.seq, counts))
}

// refresh reloads unless a load is under way.
func (m *tasksModel) refresh() tea.Cmd {
	if m.pending > 0 {
		return nil
	}
	return m.load()
}

// inputFocused reports whether keys go to a text input.
func (m tasksModel) inputFocused() bool { return m.searching || m.filtering }

// selected is the task under the cursor.
func (m tasksModel) selected() *agentledger.Task {
	i := m.table.Cursor()
	if i < 0 || i >= len(m.shown) {
		return nil
	}
	return m.shown[i]
}

// setFilter applies a new filter from the first page.
func (m *tasksModel) setFilter(f Filter) tea.Cmd {
	m.filter, m.before, m.back, m.stale, m.end = f, 0, nil, true, false
	moveTo(&m.table, 0)
	return m.load()
}

// Update handles the table's messages and keys.
func (m tasksModel) Update(msg tea.Msg) (tasksModel, tea.Cmd) {
	switch msg := msg.(type) {
	case pageMsg:
		if msg.seq != m.seq {
			return m, nil
		}
		m.pending--
		m.err = msg.err
		if msg.err == nil && msg.seq == m.forward && len(msg.rows) == 0 && len(m.back) > 0 {
			// The page was full and the last: stay on it (its rows are
			// still loaded) rather than show an empty one.
			m.before, m.back = m.back[len(m.back)-1], m.back[:len(m.back)-1]
			m.stale, m.end = false, true
			moveTo(&m.table, m.forwardRow)
			m.note = m.pageNote(true)
			return m, nil
		}
		if msg.err == nil {
			m.rows, m.loaded, m.stale = msg.rows, true, false
			m.apply()
		}
		return m, nil
	case countsMsg:
		if msg.seq != m.seq {
			return m, nil
		}
		m.pending--
		if msg.err == nil {
			m.counts = msg.counts
		} else {
			m.err = msg.err
		}
		return m, nil
	case tea.KeyMsg:
		switch {
		case m.filtering:
			return m.updateForm(msg)
		case m.searching:
			return m.updateSearch(msg)
		}
		return m.updateKeys(msg)
	}
	return m, nil
}

func (m tasksModel) updateKeys(msg tea.KeyMsg) (tasksModel, tea.Cmd) {
	k := m.env.keys
	switch {
	case key.Matches(msg, k.NextPage):
		if m.stale {
			if m.err == nil { // else the status line shows why it did not load
				m.note = fmt.Sprintf("page %d is still loading: %s again once it is shown", len(m.back)+1, k.NextPage.Help().Key)
			}
			return m, nil
		}
		if len(m.rows) < m.env.opts.PageSize {
			m.note = m.pageNote(true)
			return m, nil
		}
		// A full page may be the last (end): look again, since tasks
		// entering the filter may have made a next page since.
		m.back, m.forwardRow = append(m.back, m.before), m.table.Cursor()
		m.before, m.stale, m.end = m.rows[len(m.rows)-1].ID, true, false
		moveTo(&m.table, 0)
		cmd := m.load()
		m.forward = m.seq
		return m, cmd
	case key.Matches(msg, k.PrevPage):
		if len(m.back) == 0 {
			m.note = m.pageNote(false)
			return m, nil
		}
		m.before, m.back, m.stale, m.end = m.back[len(m.back)-1], m.back[:len(m.back)-1], true, false
		moveTo(&m.table, 0)
		return m, m.load()
	case key.Matches(msg, k.State):
		f := m.filter
		f.State = nextState(f.State)
		return m, m.setFilter(f)
	case key.Matches(msg, k.Sort):
		m.sort = (m.sort + 1) % sortKeys
		m.apply()
		return m, nil
	case key.Matches(msg, k.Search):
		m.searching = true
		m.layout()
		return m, m.search.Focus()
	case key.Matches(msg, k.Filter):
		m.filtering = true
		m.form = newFilterForm(m.env, m.filter, m.known())
		m.form.setWidth(m.width)
		m.layout()
		return m, m.form.focus()
	case key.Matches(msg, k.ClearFilter):
		m.search.SetValue("")
		if m.filter == (Filter{}) {
			m.apply()
			return m, nil
		}
		return m, m.setFilter(Filter{})
	case key.Matches(msg, k.Back):
		if m.search.Value() != "" {
			m.search.SetValue("")
			m.apply()
		}
		return m, nil
	}
	var cmd tea.Cmd
	m.table, cmd = m.table.Update(msg)
	return m, cmd
}

// pageNote says why the next-page key (next) or the previous-page key
// does nothing on this page: a user pressing it is told, not ignored.
func (m tasksModel) pageNote(next bool) string {
	k := m.env.keys
	last := len(m.rows) < m.env.opts.PageSize || m.end
	switch {
	case last && len(m.back) == 0:
		n := plural(len(m.rows), "task")
		if len(m.rows) == 0 {
			n = "no tasks"
		}
		if m.filter != (Filter{}) {
			verb := map[bool]string{true: "matches", false: "match"}[len(m.rows) == 1]
			n += " " + verb + " the filter " + m.filter.String()
		}
		return "one page only: " + n
	case next:
		return fmt.Sprintf("already on the last page, page %d (%s: %s)", len(m.back)+1, k.PrevPage.Help().Key, k.PrevPage.Help().Desc)
	}
	return fmt.Sprintf("already on the first page (%s: %s)", k.NextPage.Help().Key, k.NextPage.Help().Desc)
}

func (m tasksModel) updateSearch(msg tea.KeyMsg) (tasksModel, tea.Cmd) {
	switch {
	case key.Matches(msg, m.env.keys.Back):
		m.search.SetValue("")
		fallthrough
	case key.Matches(msg, m.env.keys.Apply):
		m.searching = false
		m.search.Blur()
		m.apply()
		return m, nil
	}
	var cmd tea.Cmd
	m.search, cmd = m.search.Update(msg)
	m.apply()
	return m, cmd
}

// updateForm edits the filter form; enter applies it unless a value is
// invalid, which leaves the form open and the filter as it was.
func (m tasksModel) updateForm(msg tea.KeyMsg) (tasksModel, tea.Cmd) {
	switch {
	case key.Matches(msg, m.env.keys.Back):
		m.filtering = false
		m.layout()
		return m, nil
	case key.Matches(msg, m.env.keys.Apply):
		f, err := m.form.filter()
		if err != nil {
			m.form.err = err
			m.layout() // the error may take more lines than the hint
			return m, nil
		}
		m.filtering = false
		m.layout()
		return m, m.setFilter(f)
	}
	var cmd tea.Cmd
	m.form, cmd = m.form.Update(msg)
	m.layout() // the hint may change height
	return m, cmd
}

// known are the values of each filter field seen on the page, and the
// queues and kinds the workers announced.
func (m tasksModel) known() [fields][]string {
	var queues, kinds, tenants []string
	for _, t := range m.rows {
		queues, kinds, tenants = append(queues, t.Queue), append(kinds, t.Kind), append(tenants, t.Tenant)
	}
	var out [fields][]string
	out[fieldQueue] = knownValues(queues, m.workerQueues)
	out[fieldKind] = knownValues(kinds, m.workerKinds)
	out[fieldTenant] = knownValues(tenants)
	return out
}

// setWorkers takes the queues and kinds the workers announced.
func (m *tasksModel) setWorkers(ws []operator.Worker) {
	m.workerQueues, m.workerKinds = nil, nil
	for _, w := range ws {
		m.workerQueues = append(m.workerQueues, w.Queues...)
		m.workerKinds = append(m.workerKinds, w.Kinds...)
	}
}

// nextState cycles the state filter: every state, then each in turn.
func nextState(s agentledger.TaskState) agentledger.TaskState {
	if s == "" {
		return agentledger.TaskStates[0]
	}
	for i, st := range agentledger.TaskStates {
		if st == s && i+1 < len(agentledger.TaskStates) {
			return agentledger.TaskStates[i+1]
		}
	}
	return ""
}
