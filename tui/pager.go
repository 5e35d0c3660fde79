package tui

import (
	"fmt"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// pager keeps a list's place when the list is read a page at a time after
// a position (keyset paging): the page on screen holds what sorts after
// after (nil: from the first), and back the starts of the pages before
// it. Each page shows what is there when it loads.
type pager[P any] struct {
	after *P
	back  []*P
	note  string // why a page key did nothing, until the next key
}

// key handles the next- and previous-page keys (handled), given whether
// the page on screen is full and its last row's position; turned says the
// page changed, for the caller to load it. Any key clears the note.
func (p *pager[P]) key(k KeyMap, msg tea.KeyMsg, full bool, last func() P) (handled, turned bool) {
	p.note = ""
	switch {
	case key.Matches(msg, k.NextPage):
		return true, p.next(full, last)
	case key.Matches(msg, k.PrevPage):
		return true, p.prev()
	}
	return false, false
}

// next turns to the page after last, unless the page on screen is not
// full (it is the last); it reports whether the page turned.
func (p *pager[P]) next(full bool, last func() P) bool {
	if !full {
		p.note = "already on the last page"
		return false
	}
	l := last()
	p.back, p.after = append(p.back, p.after), &l
	return true
}

// prev turns to the page before, if any; it reports whether it turned.
func (p *pager[P]) prev() bool {
	if len(p.back) == 0 {
		p.note = "already on the first page"
		return false
	}
	p.after, p.back = p.back[len(p.back)-1], p.back[:len(p.back)-1]
	return true
}

// status is the totals line's end: which page is on screen and how many
// of total it shows (size when full), with the keys that turn it; empty
// for a first page that holds them all.
func (p pager[P]) status(k KeyMap, shown, size int, total int64) string {
	var s string
	if page := len(p.back) + 1; page > 1 || total > int64(shown) {
		s = fmt.Sprintf(" · page %d, %d shown", page, shown)
		if shown == size {
			s += " · " + k.NextPage.Help().Key + " next"
		}
		if page > 1 {
			s += " · " + k.PrevPage.Help().Key + " previous"
		}
	}
	if p.note != "" {
		s += " · " + p.note
	}
	return s
}
