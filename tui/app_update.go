package tui

import (
	"fmt"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
)

// Update routes a message (see route) and, when it put up a new status
// message, schedules its expiry.
func (a App) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	seq := a.statusSeq
	m, cmd := a.route(msg)
	b := m.(App)
	if b.statusSeq != seq && b.status != "" && b.env.opts.StatusFor > 0 {
		cmd = tea.Batch(cmd, b.cmd.expireStatus(b.statusSeq, b.env.opts.StatusFor))
	}
	if b.helpHeight != lipgloss.Height(b.helpView())+b.statusHeight() {
		b.layout() // the help or the status grew or shrank: so does the view
	}
	return b, cmd
}

// route routes a message: sizes to every view, ticks to the visible one
// (and the workers),
// loads to their models, keys to the dialog if one is open, else to the
// root's bindings and then to the visible view. A key first clears the
// status message: it told of the previous action.
func (a App) route(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		a.width, a.height = msg.Width, msg.Height
		a.layout()
		return a, nil
	case tickMsg:
		return a, tea.Batch(a.refresh(), a.tick())
	case pageMsg, countsMsg:
		var cmd tea.Cmd
		a.tasks, cmd = a.tasks.Update(msg)
		if a.view == viewTasks {
			a.takeTasksNote() // a next page found empty
		}
		a.tasks.note = "" // said of a view no longer shown
		return a, cmd
	case detailMsg:
		var cmd tea.Cmd
		a.task, cmd = a.task.Update(msg)
		return a, cmd
	case workersMsg:
		var cmd tea.Cmd
		a.workers, cmd = a.workers.Update(msg)
		if msg.err == nil {
			a.tasks.setWorkers(msg.workers)
		}
		return a, cmd
	case limitsMsg:
		var cmd tea.Cmd
		a.limits, cmd = a.limits.Update(msg)
		return a, cmd
	case sharesMsg:
		var cmd tea.Cmd
		a.shares, cmd = a.shares.Update(msg)
		return a, cmd
	case approvalCountMsg:
		a.pendingCounting = false
		if msg.err == nil {
			a.pending, a.pendingKnown = msg.n, true
		}
		return a, nil
	case approvalsMsg:
		var cmd tea.Cmd
		a.approvals, cmd = a.approvals.Update(msg)
		if msg.err == nil {
			a.pending, a.pendingKnown = msg.total, true
		}
		return a, cmd
	case approvalMsg:
		if msg.decide {
			return a.openDecision(msg)
		}
		var cmd tea.Cmd
		a.approvals, cmd = a.approvals.Update(msg)
		return a, cmd
	case waitCountMsg:
		a.waitingCounting = false
		if msg.err == nil {
			a.waiting, a.waitingKnown = msg.n, true
		}
		return a, nil
	case waitsMsg:
		var cmd tea.Cmd
		a.waits, cmd = a.waits.Update(msg)
		if msg.err == nil {
			a.waiting, a.waitingKnown = msg.total, true
		}
		return a, cmd
	case waitMsg:
		if msg.act != waitShow {
			return a.openWaitAction(msg)
		}
		var cmd tea.Cmd
		a.waits, cmd = a.waits.Update(msg)
		return a, cmd
	case previewMsg:
		return a.openPreview(msg)
	case rerunCheckMsg:
		return a.openRerun(msg)
	case compensationMsg:
		return a.openCompensation(msg)
	case redeliveryMsg:
		return a.openRedelivery(msg)
	case bulkCountMsg:
		return a.openBulk(msg)
	case actionMsg:
		a.setStatus(msg.text, msg.err)
		return a, tea.Batch(a.reload(), a.countApprovals(), a.countWaits())
	case statusExpiredMsg:
		if msg.seq == a.statusSeq {
			a.clearStatus()
		}
		return a, nil
	case tea.KeyMsg:
		a.clearStatus()
		return a.key(msg)
	}
	return a, nil
}

// key handles a key press.
func (a App) key(msg tea.KeyMsg) (tea.Model, tea.Cmd) {
	k := a.env.keys
	if msg.String() == "ctrl+c" {
		return a, tea.Quit
	}
	if msg.Type == tea.KeyRunes && len(msg.Runes) > 1 && !msg.Paste {
		// Keys typed faster than the terminal is read arrive as one
		// message: each is its own key here (the first may open the
		// search the others go to).
		var cmds []tea.Cmd
		for _, r := range msg.Runes {
			var m tea.Model
			var cmd tea.Cmd
			m, cmd = a.key(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}, Alt: msg.Alt})
			a, cmds = m.(App), append(cmds, cmd)
		}
		return a, tea.Batch(cmds...)
	}
	if a.dialog != nil {
		d, cmd := a.dialog.Update(msg)
		a.dialog = &d
		if d.closed {
			a.dialog = nil
			a.layout()
		}
		if d.dropped {
			a.setStatus(d.dropNote, nil)
		}
		return a, cmd
	}
	if a.view == viewTasks && a.tasks.inputFocused() {
		var cmd tea.Cmd
		a.tasks, cmd = a.tasks.Update(msg)
		return a, cmd
	}
	if a.help.ShowAll && key.Matches(msg, k.Back) { // esc closes the full help before it goes back a view
		a.help.ShowAll = false
		a.layout()
		return a, nil
	}
	if a.view == viewApprovals && a.approvals.openID != 0 && key.Matches(msg, k.Back) {
		return a, a.approvals.close() // back to the list, not the tasks
	}
	if a.view == viewWaits && a.waits.openID != 0 && key.Matches(msg, k.Back) {
		return a, a.waits.close()
	}
	switch {
	case key.Matches(msg, k.Quit):
		return a, tea.Quit
	case key.Matches(msg, k.Help):
		a.help.ShowAll = !a.help.ShowAll
		a.layout() // the body gives the full help its rows, and takes them back
		return a, nil
	case key.Matches(msg, k.Workers) && a.view != viewWorkers:
		a.view = viewWorkers
		a.layout()
		return a, a.workers.load()
	case key.Matches(msg, k.Limits) && a.view != viewLimits:
		a.view = viewLimits
		a.layout()
		return a, a.limits.load()
	case key.Matches(msg, k.Shares) && a.view != viewShares:
		a.view = viewShares
		a.layout()
		return a, a.shares.load()
	case key.Matches(msg, k.Approvals) && a.view != viewApprovals:
		a.view = viewApprovals
		a.approvals.openID, a.approvals.request = 0, nil
		a.layout()
		return a, a.approvals.load()
	case key.Matches(msg, k.Waits) && a.view != viewWaits:
		a.view = viewWaits
		a.waits.openID, a.waits.wait = 0, nil
		a.layout()
		return a, a.waits.load()
	case key.Matches(msg, k.Back) && a.view != viewTasks:
		a.view = viewTasks
		a.layout()
		return a, a.tasks.load()
	}
	if cmd, ok := a.action(msg); ok {
		return a, cmd
	}
	var cmd tea.Cmd
	switch a.view {
	case viewTasks:
		if key.Matches(msg, k.Open) {
			if t := a.tasks.selected(); t != nil {
				return a.openTask(t.ID)
			}
			return a, nil
		}
		a.tasks, cmd = a.tasks.Update(msg)
		a.takeTasksNote()
	case viewTask:
		if key.Matches(msg, k.Approve) || key.Matches(msg, k.DenyRequest) {
			if r := a.task.pendingApproval(); r != nil {
				return a, a.askDecision(r, key.Matches(msg, k.Approve))
			}
			if a.task.detail != nil { // the help offers y and d on every task page
				a.setStatus("", fmt.Errorf("task %d waits for no approval: y and d decide a pending request (a lists them)", a.task.id))
			}
			return a, nil
		}
		if act, ok := a.waitAction(msg); ok {
			if w := a.task.waiting(); w != nil {
				return a, a.askWait(w, act)
			}
			a.setStatus("", fmt.Errorf("task %d waits for no signal, timer or child: there is no wait to act on", a.task.id))
			return a, nil
		}
		a.task, cmd = a.task.Update(msg)
	case viewApprovals:
		switch {
		case key.Matches(msg, k.Approve) || key.Matches(msg, k.DenyRequest):
			return a, a.askDecision(a.approvals.selected(), key.Matches(msg, k.Approve))
		case a.approvals.openID == 0 && key.Matches(msg, k.Open):
			if r := a.approvals.selected(); r != nil {
				return a, a.approvals.open(*r)
			}
			return a, nil
		}
		a.approvals, cmd = a.approvals.Update(msg)
	case viewWaits:
		if act, ok := a.waitAction(msg); ok {
			return a, a.askWait(a.waits.selected(), act)
		}
		if a.waits.openID == 0 && key.Matches(msg, k.Open) {
			if w := a.waits.selected(); w != nil {
				return a, a.waits.open(*w)
			}
			return a, nil
		}
		a.waits, cmd = a.waits.Update(msg)
	case viewWorkers:
		a.workers, cmd = a.workers.Update(msg)
	case viewLimits:
		a.limits, cmd = a.limits.Update(msg)
	case viewShares:
		a.shares, cmd = a.shares.Update(msg)
	}
	return a, cmd
}

// waitAction is the action on a wait msg asks for, if any.
func (a App) waitAction(msg tea.KeyMsg) (waitAct, bool) {
	switch k := a.env.keys; {
	case key.Matches(msg, k.SendSignal):
		return waitSend, true
	case key.Matches(msg, k.EndWait):
		return waitEnd, true
	}
	return waitShow, false
}

// openTask shows task id.
func (a App) openTask(id int64) (tea.Model, tea.Cmd) {
	a.view = viewTask
	a.task = newTaskModel(a.env, a.cmd, id, a.width, a.bodyHeight())
	return a, a.task.load()
}

// refresh reloads the visible view and the workers (the title says when
// none is live), unless they are loading already.
func (a *App) refresh() tea.Cmd {
	workers := tea.Batch(a.workers.refresh(), a.countApprovals(), a.countWaits())
	switch a.view {
	case viewApprovals:
		return tea.Batch(a.approvals.refresh(), workers)
	case viewWaits:
		return tea.Batch(a.waits.refresh(), workers)
	case viewTask:
		return tea.Batch(a.task.refresh(), workers)
	case viewWorkers:
		return workers
	case viewLimits:
		return tea.Batch(a.limits.refresh(), workers)
	case viewShares:
		return tea.Batch(a.shares.refresh(), workers)
	}
	return tea.Batch(a.tasks.refresh(), workers)
}

// reload reloads the visible view now, after an action.
func (a *App) reload() tea.Cmd {
	switch a.view {
	case viewTask:
		return a.task.load()
	case viewWorkers:
		return a.workers.load()
	case viewLimits:
		return a.limits.load()
	case viewShares:
		return a.shares.load()
	case viewApprovals:
		return a.approvals.load()
	case viewWaits:
		return a.waits.load()
	}
	return a.tasks.load()
}

// countApprovals counts the pending approval requests for the title,
// unless a count is under way. The approvals view's list counts them
// too.
func (a *App) countApprovals() tea.Cmd {
	if a.pendingCounting || (a.view == viewApprovals && a.approvals.openID == 0) {
		return nil
	}
	a.pendingCounting = true
	return a.cmd.approvalCount()
}

// countWaits counts the waiting waits for the title, unless a count is
// under way. The waits view's list counts them too.
func (a *App) countWaits() tea.Cmd {
	if a.waitingCounting || (a.view == viewWaits && a.waits.openID == 0) {
		return nil
	}
	a.waitingCounting = true
	return a.cmd.waitCount()
}

// setStatus shows what an action did, or its error, until the next key or
// Options.StatusFor has passed (Update schedules that).
func (a *App) setStatus(text string, err error) {
	a.status, a.statusErr = text, err != nil
	if err != nil {
		a.status = err.Error()
	}
	a.statusSeq++
}

// takeTasksNote puts up what the tasks view said of a key that did
// nothing (a page key with no page to go to), so that the key is not
// silently ignored.
func (a *App) takeTasksNote() {
	if a.tasks.note != "" {
		a.setStatus(a.tasks.note, nil)
		a.tasks.note = ""
	}
}

// clearStatus takes the status message down.
func (a *App) clearStatus() { a.status, a.statusErr = "", false }
