package tui

import (
	"context"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
)

// epoch is the tests' clock.
var epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// driver runs an App without a terminal: it sends messages and runs the
// commands they return, feeding their messages back, until none is left.
type driver struct {
	t *testing.T
	m tea.Model
}

// newDriver starts an App over store at width×height, live refresh off and
// status messages kept until the next key (send statusExpiredMsg to expire
// one).
func newDriver(t *testing.T, store Store, opts Options, width, height int) *driver {
	t.Helper()
	if opts.Now == nil {
		opts.Now = func() time.Time { return epoch }
	}
	opts.Location, opts.Poll, opts.StatusFor = time.UTC, -1, -1
	d := &driver{t: t, m: New(context.Background(), store, opts)}
	d.send(tea.WindowSizeMsg{Width: width, Height: height})
	d.run(d.m.Init())
	return d
}

// send delivers msg and runs what follows from it.
func (d *driver) send(msg tea.Msg) {
	d.t.Helper()
	var cmd tea.Cmd
	d.m, cmd = d.m.Update(msg)
	d.run(cmd)
}

// keys types each key: a rune, or a named key in angle brackets.
func (d *driver) keys(keys ...string) {
	d.t.Helper()
	for _, k := range keys {
		d.send(keyMsg(k))
	}
}

// typeText types s rune by rune.
func (d *driver) typeText(s string) {
	d.t.Helper()
	for _, r := range s {
		d.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}})
	}
}

func keyMsg(k string) tea.KeyMsg {
	switch k {
	case "enter":
		return tea.KeyMsg{Type: tea.KeyEnter}
	case "esc":
		return tea.KeyMsg{Type: tea.KeyEsc}
	case "tab":
		return tea.KeyMsg{Type: tea.KeyTab}
	case "down":
		return tea.KeyMsg{Type: tea.KeyDown}
	case "up":
		return tea.KeyMsg{Type: tea.KeyUp}
	case "backspace":
		return tea.KeyMsg{Type: tea.KeyBackspace}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)}
}

func (d *driver) run(cmd tea.Cmd) {
	d.t.Helper()
	queue := []tea.Cmd{cmd}
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		if c == nil {
			continue
		}
		switch msg := c().(type) {
		case nil, tea.QuitMsg:
		case tea.BatchMsg:
			queue = append(queue, msg...)
		default:
			var next tea.Cmd
			d.m, next = d.m.Update(msg)
			queue = append(queue, next)
		}
	}
}

// app is the model as it stands.
func (d *driver) app() App { return d.m.(App) }

// view is the screen as text.
func (d *driver) view() string { return d.m.View() }

// checkFrame fails unless the screen is exactly width×height or less wide.
func checkFrame(t *testing.T, view string, width, height int) {
	t.Helper()
	lines := strings.Split(view, "\n")
	if len(lines) != height {
		t.Errorf("view has %d lines, want %d:\n%s", len(lines), height, view)
	}
	for i, l := range lines {
		if w := ansi.StringWidth(l); w > width {
			t.Errorf("line %d is %d cells wide, more than %d: %q", i+1, w, width, l)
		}
	}
}
