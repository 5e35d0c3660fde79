package tui

import (
	"context"

	"github.com/charmbracelet/bubbles/help"
	tea "github.com/charmbracelet/bubbletea"
)

// view is what fills the screen.
type view int

const (
	viewTasks view = iota
	viewTask
	viewWorkers
	viewLimits
	viewShares
	viewApprovals
	viewWaits
)

// App is the console's root model. It owns the component models, routes
// messages to them, and opens the dialogs of the operator's actions.
type App struct {
	env *env
	cmd commands

	help      help.Model
	view      view
	tasks     tasksModel
	task      taskModel
	workers   workersModel
	limits    limitsModel
	shares    sharesModel
	approvals approvalsModel
	waits     waitsModel
	dialog    *dialogModel

	// pending is how many approval requests wait, for the title; known
	// once counted.
	pending         int64
	pendingKnown    bool
	pendingCounting bool
	// waiting is how many waits wait, for the title, likewise.
	waiting         int64
	waitingKnown    bool
	waitingCounting bool

	status    string
	statusErr bool
	statusSeq int // numbers the status messages: an expiry clears only its own

	width, height int
	helpHeight    int // of the help bar and status the sizes were laid out for
}

var _ tea.Model = App{}

// New returns the console over store. ctx bounds every store call and the
// live refresh: cancel it to stop them.
func New(ctx context.Context, store Store, opts Options) App {
	e := &env{keys: DefaultKeyMap(), styles: DefaultStyles(), opts: opts.withDefaults()}
	c := commands{ctx: ctx, store: store}
	a := App{env: e, cmd: c, help: help.New(), tasks: newTasksModel(e, c), workers: newWorkersModel(e, c),
		limits: newLimitsModel(e, c), shares: newSharesModel(e, c), approvals: newApprovalsModel(e, c), waits: newWaitsModel(e, c), task: newTaskModel(e, c, 0, 80, 24), width: 80, height: 24}
	a.layout()
	return a
}

// Init loads the first page and starts the live refresh: its first tick
// is now.
func (a App) Init() tea.Cmd {
	return func() tea.Msg { return tickMsg{} }
}

// tick schedules the next refresh, unless live refresh is off.
func (a App) tick() tea.Cmd {
	if a.env.opts.Poll < 0 {
		return nil
	}
	return a.cmd.tick(a.env.opts.Poll)
}
