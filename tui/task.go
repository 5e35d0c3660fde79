package tui

import (
	"github.com/agentledger/agentledger"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/agentledger/agentledger/approvals"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/operator"
	"github.com/agentledger/agentledger/waits"
)

// tab is a tab of the task view.
type tab int

const (
	tabOverview tab = iota
	tabAttempts
	tabJournal
	tabNotifications
	tabs // how many tabs there are
)

// taskModel is the task view: one task, its attempts, its journal and its
// notifications, one tab at a time.
type taskModel struct {
	env *env
	cmd commands

	id      int64
	detail  *Detail
	err     error
	loading bool

	tab     tab
	page    viewport.Model // the overview, attempts and notifications tabs
	journal journalModel

	width, height int
}

func newTaskModel(e *env, c commands, id int64, width, height int) taskModel {
	m := taskModel{env: e, cmd: c, id: id, page: viewport.New(width, 1), journal: newJournalModel(e)}
	m.page.KeyMap = viewport.KeyMap{Up: e.keys.Up, Down: e.keys.Down, PageUp: e.keys.PageUp, PageDown: e.keys.PageDown}
	m.setSize(width, height)
	return m
}

// load reads the task again.
func (m *taskModel) load() tea.Cmd {
	m.loading = true
	return m.cmd.detail(m.id)
}

// refresh reloads unless a load is under way.
func (m *taskModel) refresh() tea.Cmd {
	if m.loading {
		return nil
	}
	return m.load()
}

// setSize gives the view the screen below the title.
func (m *taskModel) setSize(width, height int) {
	m.width, m.height = width, height
	m.page.Width, m.page.Height = width, max(height-2, 1)
	m.journal.setSize(width, max(height-2, 1))
	m.render()
}

// resolveTarget is the effect a resolve acts on: the journal's selected
// row when it is unknown, else resolvable's.
func (m taskModel) resolveTarget() (operator.Effect, bool) {
	if m.detail == nil {
		return operator.Effect{}, false
	}
	if e, ok := m.journal.selected(); ok && m.tab == tabJournal && e.State == ledger.StateUnknown {
		return e, true
	}
	return resolvable(m.detail)
}

// resolvable is the effect of d's task that a resolve would settle: one
// of unknown outcome, else a compensation that failed for good, which a
// parked task's operator may resolve as done (undone by hand): the
// newest.
func resolvable(d *Detail) (operator.Effect, bool) {
	for _, e := range d.Journal {
		if e.State == ledger.StateUnknown {
			return e, true
		}
	}
	var failed *operator.Effect
	for i, e := range d.Journal {
		if d.Task.State == agentledger.StateNeedsAttention && e.Undoes != "" && e.State == ledger.StateFailed {
			failed = &d.Journal[i]
		}
	}
	if failed != nil {
		return *failed, true
	}
	return operator.Effect{}, false
}

// pendingApproval is the task's request that waits for a decision, if
// any.
func (m taskModel) pendingApproval() *approvals.Request {
	if m.detail == nil {
		return nil
	}
	for i, r := range m.detail.Approvals {
		if r.State == approvals.Pending {
			return &m.detail.Approvals[i]
		}
	}
	return nil
}

// waiting is the task's wait that waits, if any.
func (m taskModel) waiting() *Wait { return waitingOf(m.detail) }

// waitingOf is d's task's wait that waits, if any: a task waits at one
// step at a time.
func waitingOf(d *Detail) *Wait {
	if d == nil {
		return nil
	}
	for i, w := range d.Waits {
		if w.State == waits.Waiting {
			return &d.Waits[i]
		}
	}
	return nil
}

// Update handles the task's loads and the view's keys.
func (m taskModel) Update(msg tea.Msg) (taskModel, tea.Cmd) {
	switch msg := msg.(type) {
	case detailMsg:
		if msg.id != m.id {
			return m, nil
		}
		m.loading = false
		m.err = msg.err
		if msg.err == nil {
			m.detail = msg.detail
			m.journal.set(msg.detail.Journal)
			m.render()
		}
		return m, nil
	case tea.KeyMsg:
		k := m.env.keys
		switch {
		case key.Matches(msg, k.NextTab):
			m.tab = (m.tab + 1) % tabs
			m.page.GotoTop()
			m.render()
			return m, nil
		case key.Matches(msg, k.PrevTab):
			m.tab = (m.tab + tabs - 1) % tabs
			m.page.GotoTop()
			m.render()
			return m, nil
		case m.tab == tabJournal:
			m.journal = m.journal.Update(msg)
			return m, nil
		}
		var cmd tea.Cmd
		m.page, cmd = m.page.Update(msg)
		return m, cmd
	}
	return m, nil
}

// render puts the current tab's text into the page.
func (m *taskModel) render() {
	if m.detail == nil {
		return
	}
	switch m.tab {
	case tabOverview:
		m.page.SetContent(m.overview())
	case tabAttempts:
		m.page.SetContent(m.attempts())
	case tabNotifications:
		m.page.SetContent(m.notifications())
	}
}
