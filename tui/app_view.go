package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/agentledger/agentledger/approvals"
)

// helpKeys are the bindings the help bar shows now.
func (a App) helpKeys() helpKeys {
	k := a.env.keys
	switch {
	case a.dialog != nil:
		return k.dialogHelp(a.dialog)
	case a.view == viewTasks && a.tasks.filtering:
		return k.inputHelp()
	case a.view == viewTasks && a.tasks.searching:
		return k.searchHelp()
	case a.view == viewTask:
		return k.taskHelp(a.task.detail)
	case a.view == viewWorkers:
		return k.workersHelp()
	case a.view == viewLimits:
		return k.limitsHelp()
	case a.view == viewShares:
		return k.sharesHelp()
	case a.view == viewApprovals:
		r := a.approvals.request
		return k.approvalsHelp(a.approvals.openID != 0, r == nil || r.State == approvals.Pending)
	case a.view == viewWaits:
		return k.waitsHelp(a.waits.openID != 0, a.waits.selected())
	}
	return k.tasksHelp()
}

// helpView is the help bar.
func (a App) helpView() string { return helpBar(a.help, a.helpKeys(), a.width) }

// bodyHeight is what the view gets: all but the title, status and help.
func (a App) bodyHeight() int {
	return max(a.height-1-a.statusHeight()-lipgloss.Height(a.helpView()), 3)
}

// maxStatusLines is the most a status message takes: it wraps rather than
// lose its end (the reason) at the screen's edge.
const maxStatusLines = 4

// statusText is the status line's text and its style: what an action
// did, or its error, or the visible view's load error.
func (a App) statusText() (string, lipgloss.Style) {
	s := a.env.styles
	switch {
	case a.statusErr:
		return a.status, s.Error
	case a.status != "":
		return a.status, s.Status
	}
	if err := a.loadErr(); err != nil {
		return err.Error(), s.Error
	}
	return "", s.Status
}

// statusView is the status wrapped to the width, at most maxStatusLines.
// It breaks at spaces only: a status often ends in a command to run
// ("agentctl rerun 27 --despite-unknown"), which must read whole.
func (a App) statusView() string {
	text, style := a.statusText()
	lines := []string{text}
	if a.width > 0 {
		lines = wrapAtSpaces(text, a.width)
	}
	for i, l := range lines {
		// Padded to the width, as the screens have it.
		lines[i] = style.Render(l + strings.Repeat(" ", max(a.width-ansi.StringWidth(l), 0)))
	}
	return fit(strings.Join(lines, "\n"), a.width, min(len(lines), maxStatusLines))
}

// statusHeight is how many lines the status takes: one at least.
func (a App) statusHeight() int { return lipgloss.Height(a.statusView()) }

// layout gives every component its size.
func (a *App) layout() {
	a.help.Width = a.width
	a.helpHeight = lipgloss.Height(a.helpView()) + a.statusHeight()
	h := a.bodyHeight()
	a.tasks.setSize(a.width, h)
	a.task.setSize(a.width, h)
	a.workers.setSize(a.width, h)
	a.limits.setSize(a.width, h)
	a.shares.setSize(a.width, h)
	a.approvals.setSize(a.width, h)
	a.waits.setSize(a.width, h)
	if a.dialog != nil {
		a.dialog.setSize(a.width, h)
	}
}

// View renders the title, the view (or its dialog), the status and help.
func (a App) View() string {
	s := a.env.styles
	where := "tasks"
	switch a.view {
	case viewTask:
		where = fmt.Sprintf("task %d", a.task.id)
	case viewWorkers:
		where = "workers"
	case viewLimits:
		where = "limits"
	case viewShares:
		where = "shares"
	case viewApprovals:
		where = "approvals"
		if a.approvals.openID != 0 {
			where = fmt.Sprintf("approval %d", a.approvals.openID)
		}
	case viewWaits:
		where = "waits"
		if a.waits.openID != 0 {
			where = fmt.Sprintf("wait %d", a.waits.openID)
		}
	}
	title := s.Title.Render("agentledger") + s.TitleDim.Render(" › ") + where
	if n, ok := a.workers.live(); ok && n == 0 {
		title += s.TitleDim.Render(" · ") + s.Stale.Render("no live workers")
	}
	if a.pendingKnown && a.pending > 0 {
		title += s.TitleDim.Render(" · ") + s.Stale.Render(plural(int(a.pending), "approval")+" pending")
	}
	if a.waitingKnown && a.waiting > 0 {
		title += s.TitleDim.Render(" · ") + plural(int(a.waiting), "wait")
	}
	var body string
	switch {
	case a.dialog != nil:
		body = lipgloss.Place(a.width, a.bodyHeight(), lipgloss.Center, lipgloss.Center, a.dialog.View())
	case a.view == viewTask:
		body = a.task.View()
	case a.view == viewWorkers:
		body = a.workers.View()
	case a.view == viewLimits:
		body = a.limits.View()
	case a.view == viewShares:
		body = a.shares.View()
	case a.view == viewApprovals:
		body = a.approvals.View()
	case a.view == viewWaits:
		body = a.waits.View()
	default:
		body = a.tasks.View()
	}
	return strings.Join([]string{
		cut(title, a.width),
		fit(body, a.width, a.bodyHeight()),
		a.statusView(),
		fit(a.helpView(), a.width, lipgloss.Height(a.helpView())),
	}, "\n")
}

// loadErr is the visible view's last load error, if any.
func (a App) loadErr() error {
	switch a.view {
	case viewTask:
		if a.task.detail != nil {
			return a.task.err
		}
		return nil // the view says it
	case viewWorkers:
		return a.workers.err
	case viewLimits:
		return a.limits.err
	case viewShares:
		return a.shares.err
	case viewApprovals:
		if a.approvals.openID != 0 && a.approvals.request != nil {
			return a.approvals.openErr
		}
		return nil // the view says it
	case viewWaits:
		if a.waits.openID != 0 && a.waits.wait != nil {
			return a.waits.openErr
		}
		return nil // the view says it
	}
	return a.tasks.err
}
