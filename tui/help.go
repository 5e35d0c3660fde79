package tui

import (
	"strings"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/lipgloss"
)

// helpBar renders keys for a screen width cells wide. The short line
// keeps its last bindings (? help, q quit: the way to the rest and out)
// and drops from the middle what does not fit; the full help's columns
// wrap onto more rows rather than losing the last ones off the edge.
func helpBar(h help.Model, keys helpKeys, width int) string {
	if h.ShowAll {
		return fullHelp(h, keys.full, width)
	}
	return shortHelp(h, keys.short, width)
}

// shortHelp is the short help line. The bindings at its end that isTail
// names (help, quit, back) always show; those before fill what is left,
// a "…" standing for the ones dropped.
func shortHelp(h help.Model, bindings []key.Binding, width int) string {
	n := len(bindings)
	for n > 0 && isTail(bindings[n-1]) {
		n--
	}
	item := func(b key.Binding) string {
		return h.Styles.ShortKey.Inline(true).Render(b.Help().Key) + " " + h.Styles.ShortDesc.Inline(true).Render(b.Help().Desc)
	}
	sep := h.Styles.ShortSeparator.Inline(true).Render(h.ShortSeparator)
	ellipsis := h.Styles.Ellipsis.Inline(true).Render(h.Ellipsis)
	var tail []string
	for _, b := range bindings[n:] {
		tail = append(tail, item(b))
	}
	end := strings.Join(tail, sep)
	room := width - lipgloss.Width(end)
	if len(tail) > 0 {
		room -= lipgloss.Width(sep)
	}
	var head []string
	used := 0
	for i, b := range bindings[:n] {
		it := item(b)
		w := lipgloss.Width(it)
		if len(head) > 0 {
			w += lipgloss.Width(sep)
		}
		// The last of the head needs no room for a "…" after it.
		need := w
		if i < n-1 {
			need += 1 + lipgloss.Width(ellipsis)
		}
		if width > 0 && used+need > room {
			head = append(head, ellipsis)
			break
		}
		head, used = append(head, it), used+w
	}
	line := strings.Join(head, sep)
	if strings.HasSuffix(line, sep+ellipsis) {
		line = strings.TrimSuffix(line, sep+ellipsis) + " " + ellipsis
	}
	if line == "" {
		return end
	}
	if end == "" {
		return line
	}
	return line + sep + end
}

// isTail reports whether b is one of the bindings a short line keeps.
func isTail(b key.Binding) bool {
	k := b.Help().Key
	return k == "?" || k == "q" || k == "esc"
}

// fullHelp lays the full help's columns side by side, starting a new row
// of columns when the next would not fit.
func fullHelp(h help.Model, groups [][]key.Binding, width int) string {
	h.Width = 0
	sep := h.Styles.FullSeparator.Render(h.FullSeparator)
	var rows, row []string
	rowWidth := 0
	for _, g := range groups {
		col := h.FullHelpView([][]key.Binding{g})
		w := lipgloss.Width(col)
		if len(row) > 0 && rowWidth+lipgloss.Width(sep)+w > width {
			rows = append(rows, lipgloss.JoinHorizontal(lipgloss.Top, row...))
			row, rowWidth = nil, 0
		}
		if len(row) > 0 {
			row, rowWidth = append(row, sep), rowWidth+lipgloss.Width(sep)
		}
		row, rowWidth = append(row, col), rowWidth+w
	}
	if len(row) > 0 {
		rows = append(rows, lipgloss.JoinHorizontal(lipgloss.Top, row...))
	}
	return strings.Join(rows, "\n")
}
