package tui

import (
	"fmt"
	"testing"
)

// The console draws on any terminal, however short: every view, with the
// full help open too, at heights from 1 row up (a terminal of 80×16
// opening the help, or one of 80×6, panicked on a negative height).
func TestConsoleDrawsOnShortTerminals(t *testing.T) {
	t.Parallel()
	for _, size := range [][2]int{{80, 1}, {80, 2}, {80, 4}, {80, 6}, {80, 13}, {80, 16}, {80, 20}, {60, 20}, {160, 12}, {20, 3}} {
		for _, view := range []string{"", "w", "L", "S", "a", "W", "enter"} {
			t.Run(fmt.Sprintf("%dx%d/%s", size[0], size[1], view), func(t *testing.T) {
				t.Parallel()
				d := newDriver(t, newFakeStore(12, epoch), Options{}, size[0], size[1])
				if view != "" {
					d.keys(view)
				}
				_ = d.view()
				d.keys("?")
				_ = d.view()
				d.keys("?", "j", "G")
				_ = d.view()
			})
		}
	}
}
