package tui

import (
	"context"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
)

// Connecting is the console while its store opens: an embedded cluster
// takes seconds to start, and a blank screen that swallows keys looks
// hung. It draws at once, keeps the keys typed meanwhile and hands them to
// the console once its first page has loaded, so that "j enter" typed
// ahead opens the second task. ctrl+c quits at any time.
type Connecting struct {
	ctx  context.Context
	open func(context.Context) (Store, error)
	opts Options

	app     *App
	pending []tea.KeyMsg // typed before the first page
	size    *tea.WindowSizeMsg
	err     error
}

var _ tea.Model = Connecting{}

// openedMsg carries the opened store, or why it did not open.
type openedMsg struct {
	store Store
	err   error
}

// Connect returns the console that opens its store with open first (ctx
// bounds that and, as for New, every store call after).
func Connect(ctx context.Context, open func(context.Context) (Store, error), opts Options) Connecting {
	return Connecting{ctx: ctx, open: open, opts: opts}
}

// Err is why the store did not open, once the program has ended.
func (c Connecting) Err() error { return c.err }

// Init opens the store.
func (c Connecting) Init() tea.Cmd {
	return func() tea.Msg {
		s, err := c.open(c.ctx)
		return openedMsg{s, err}
	}
}

// Update keeps sizes and keys until the console is up and has its first
// page, then passes everything to it.
func (c Connecting) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if k, ok := msg.(tea.KeyMsg); ok && k.String() == "ctrl+c" {
		return c, tea.Quit
	}
	switch msg := msg.(type) {
	case openedMsg:
		if msg.err != nil {
			c.err = msg.err
			return c, tea.Quit
		}
		a := New(c.ctx, msg.store, c.opts)
		cmds := []tea.Cmd{a.Init()}
		if c.size != nil {
			m, cmd := a.Update(*c.size)
			a, cmds = m.(App), append(cmds, cmd)
		}
		c.app = &a
		return c, tea.Batch(cmds...)
	case tea.WindowSizeMsg:
		c.size = &msg
	case tea.KeyMsg:
		if c.app == nil || !c.app.ready() {
			c.pending = append(c.pending, msg)
			return c, nil
		}
	}
	if c.app == nil {
		return c, nil
	}
	m, cmd := c.app.Update(msg)
	a := m.(App)
	c.app = &a
	if len(c.pending) == 0 || !a.ready() {
		return c, cmd
	}
	// The first page is in: the keys typed ahead apply to it, in order.
	cmds := []tea.Cmd{cmd}
	for _, k := range c.pending {
		m, cmd = a.Update(k)
		a, cmds = m.(App), append(cmds, cmd)
	}
	c.app, c.pending = &a, nil
	return c, tea.Batch(cmds...)
}

// View is the console, or until it is up a line saying what it waits for.
func (c Connecting) View() string {
	if c.app != nil {
		return c.app.View()
	}
	width, height := 80, 24
	if c.size != nil {
		width, height = c.size.Width, c.size.Height
	}
	s := DefaultStyles()
	lines := []string{s.Title.Render("agentledger") + s.TitleDim.Render(" › ") + "connecting to the database…"}
	if n := len(c.pending); n > 0 {
		lines = append(lines, s.Dim.Render(plural(n, "key")+" typed: they apply once the tasks are shown"))
	}
	return fit(strings.Join(lines, "\n"), width, height)
}

// ready reports whether the tasks view has its first page (or failed to
// load it): keys typed ahead may apply from then on.
func (a App) ready() bool { return a.tasks.loaded || a.tasks.err != nil }
