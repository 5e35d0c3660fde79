package tui

import (
	"slices"

	"github.com/charmbracelet/x/ansi"
)

// grid lays rows out in columns two spaces apart, the header (rows[0])
// in bold, for a view width wide. No cell is cut: when the line would be
// wider than the view, the columns named in drop go, in that order, and
// what is still too wide is cut at the edge, so that the first column (a
// target, a tenant: what agentctl takes) stays whole. Of those named, a
// column with nothing in it (every cell "-") goes before the others.
func grid(e *env, width int, rows [][]string, drop ...string) []string {
	rows = slices.Clone(rows) // the caller's rows keep their columns
	drop = slices.Clone(drop)
	slices.SortStableFunc(drop, func(a, b string) int {
		return boolOrder(!emptyColumn(rows, a), !emptyColumn(rows, b))
	})
	for _, name := range drop {
		if width <= 0 || gridWidth(rows) <= width {
			break
		}
		i := slices.Index(rows[0], name)
		if i < 0 {
			continue
		}
		for j, r := range rows {
			rows[j] = slices.Delete(slices.Clone(r), i, i+1)
		}
	}
	w := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			w[i] = max(w[i], ansi.StringWidth(c))
		}
	}
	pad := make([]int, len(w))
	for i := range w {
		pad[i] = w[i] + 1 // columns puts one space after the cell: two apart
	}
	out := make([]string, 0, len(rows))
	for i, r := range rows {
		cells := make([]string, len(r))
		for j, c := range r {
			cells[j] = cut(oneLine(c), w[j])
		}
		line := columns(pad, cells...)
		if i == 0 {
			line = e.styles.Bold.Render(line)
		}
		out = append(out, line)
	}
	return out
}

// gridWidth is how wide grid lays rows out: every column as its widest
// cell, two spaces apart.
func gridWidth(rows [][]string) int {
	total := 0
	for i := range rows[0] {
		n := 0
		for _, r := range rows {
			n = max(n, ansi.StringWidth(r[i]))
		}
		total += n + 2
	}
	return total - 2
}

// emptyColumn reports whether the column named name holds only "-" below
// its header (false when there is no such column, or no row).
func emptyColumn(rows [][]string, name string) bool {
	i := slices.Index(rows[0], name)
	if i < 0 || len(rows) < 2 {
		return false
	}
	for _, r := range rows[1:] {
		if r[i] != "-" {
			return false
		}
	}
	return true
}

// boolOrder orders false before true.
func boolOrder(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}
