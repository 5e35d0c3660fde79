package tui

import (
	"encoding/json"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/agentledger/agentledger/render"
)

// The plain text the console shares with agentctl, under the names this
// package's code calls it by; the console styles and cuts it.
var (
	oneLine  = render.OneLine
	orDash   = render.OrDash
	short    = render.Short
	relative = render.Relative
	expiry   = render.Expiry
	shortKey = render.ShortKey
	plural   = render.Plural[int]
)

// prettyJSON indents a JSON document; a value that is not JSON comes back
// as it is.
func prettyJSON(raw json.RawMessage) string { return render.PrettyJSON(raw, "") }

// cut shortens s (which may hold styles) to at most n cells, marking a cut
// with "…".
func cut(s string, n int) string {
	if n <= 0 {
		return ""
	}
	return ansi.Truncate(s, n, "…")
}

// wrapUnder is prefix and text as lines of at most width cells, text
// wrapped at its spaces and its later lines indented under its first: a
// worker's announcements, which name every tool and host, must not end
// in "…" (the page scrolls).
func wrapUnder(prefix, text string, width int) []string {
	indent := ansi.StringWidth(prefix)
	room := width - indent
	if room < 10 || ansi.StringWidth(text) <= room {
		return []string{prefix + text}
	}
	lines := strings.Split(ansi.Wrap(text, room, " "), "\n")
	lines[0] = prefix + lines[0]
	for i := 1; i < len(lines); i++ {
		lines[i] = strings.Repeat(" ", indent) + lines[i]
	}
	return lines
}

// wrapAtSpaces is plain text s as lines of at most width cells, broken at
// spaces only (a word wider than width is cut into pieces): ansi's
// wrappers break at hyphens too, splitting a flag ("--despite-" /
// "unknown") that an operator copies.
func wrapAtSpaces(s string, width int) []string {
	var lines []string
	for _, para := range strings.Split(s, "\n") {
		line := ""
		for _, w := range strings.Fields(para) {
			for ansi.StringWidth(w) > width {
				if line != "" {
					lines, line = append(lines, line), ""
				}
				head := ansi.Truncate(w, width, "")
				lines, w = append(lines, head), strings.TrimPrefix(w, head)
			}
			switch {
			case line == "":
				line = w
			case ansi.StringWidth(line)+1+ansi.StringWidth(w) <= width:
				line += " " + w
			default:
				lines, line = append(lines, line), w
			}
		}
		lines = append(lines, line)
	}
	return lines
}

// stampLayout is how the console prints an instant.
const stampLayout = "2006-01-02 15:04:05"

// fit makes s exactly height lines of at most width cells: long lines are
// cut, missing lines are blank. A height of 0 or less (a terminal too
// short for what a view lays out) is no lines.
func fit(s string, width, height int) string {
	if height <= 0 {
		return ""
	}
	lines := strings.Split(s, "\n")
	if len(lines) > height {
		lines = lines[:height]
	}
	for i, l := range lines {
		lines[i] = cut(l, width)
	}
	for len(lines) < height {
		lines = append(lines, "")
	}
	return strings.Join(lines, "\n")
}

// columns lays cells out in columns of the given widths, one space apart;
// the last cell takes what is left. Styled cells keep their styles.
func columns(widths []int, cells ...string) string {
	var b strings.Builder
	for i, c := range cells {
		c = oneLine(c)
		if i == len(cells)-1 || i >= len(widths) {
			b.WriteString(c)
			break
		}
		c = cut(c, widths[i])
		b.WriteString(c + strings.Repeat(" ", max(widths[i]-ansi.StringWidth(c), 0)+1))
	}
	return b.String()
}
