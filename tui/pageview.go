package tui

import (
	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"
)

// loadedPage is what a view of rows loaded from the store and scrolled as
// one page keeps (the workers, the limits): the page, whether rows came,
// whether a load is under way, and the last load's error.
type loadedPage struct {
	page    viewport.Model
	loaded  bool
	loading bool
	err     error
	width   int
	height  int
}

func newLoadedPage(e *env) loadedPage {
	p := loadedPage{page: viewport.New(0, 0)}
	p.page.KeyMap = viewport.KeyMap{Up: e.keys.Up, Down: e.keys.Down, PageUp: e.keys.PageUp, PageDown: e.keys.PageDown}
	return p
}

// resize fits the page to width × height (two lines go to the title and
// the help) and lays content out again.
func (p *loadedPage) resize(width, height int, content string) {
	p.width, p.height = width, height
	p.page.Width, p.page.Height = width, max(height-2, 1)
	p.page.SetContent(content)
}

// scroll moves the page by a key.
func (p *loadedPage) scroll(msg tea.KeyMsg) tea.Cmd {
	var cmd tea.Cmd
	p.page, cmd = p.page.Update(msg)
	return cmd
}
