package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/lipgloss"
)

// helpKeys are the bindings the help bar shows now.
func (a App) helpKeys() helpKeys {
	k := a.env.keys
	switch {
	case a.dialog != nil:
		return k.dialogHelp(a.dialog.withNote)
	case a.view == viewTasks && a.tasks.filtering:
		return k.inputHelp()
	case a.view == viewTasks && a.tasks.searching:
		return k.searchHelp()
	case a.view == viewTask:
		return k.taskHelp()
	case a.view == viewWorkers:
		return k.workersHelp()
	case a.view == viewLimits:
		return k.limitsHelp()
	}
	return k.tasksHelp()
}

// helpView is the help bar.
func (a App) helpView() string { return a.help.View(a.helpKeys()) }

// bodyHeight is what the view gets: all but the title, status and help.
func (a App) bodyHeight() int {
	return max(a.height-2-lipgloss.Height(a.helpView()), 3)
}

// layout gives every component its size.
func (a *App) layout() {
	a.help.Width = a.width
	a.helpHeight = lipgloss.Height(a.helpView())
	h := a.bodyHeight()
	a.tasks.setSize(a.width, h)
	a.task.setSize(a.width, h)
	a.workers.setSize(a.width, h)
	a.limits.setSize(a.width, h)
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
	}
	title := s.Title.Render("agentledger") + s.TitleDim.Render(" › ") + where
	if n, ok := a.workers.live(); ok && n == 0 {
		title += s.TitleDim.Render(" · ") + s.Stale.Render("no live workers")
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
	default:
		body = a.tasks.View()
	}
	status := a.status
	switch {
	case a.statusErr:
		status = s.Error.Render(status)
	case status != "":
		status = s.Status.Render(status)
	}
	if err := a.loadErr(); err != nil && status == "" {
		status = s.Error.Render(err.Error())
	}
	return strings.Join([]string{
		cut(title, a.width),
		fit(body, a.width, a.bodyHeight()),
		cut(status, a.width),
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
	}
	return a.tasks.err
}
