package tui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"
)

// oneLine replaces line breaks and tabs so a value fits one line.
func oneLine(s string) string {
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ", "\t", " ").Replace(s)
}

// cut shortens s (which may hold styles) to at most n cells, marking a cut
// with "…".
func cut(s string, n int) string {
	if n <= 0 {
		return ""
	}
	return ansi.Truncate(s, n, "…")
}

// orDash returns s, or "-" when it is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// short formats a duration, rounded to the second, in its largest whole
// unit: 45s, 12m, 3h, 5d.
func short(d time.Duration) string {
	d = d.Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	default:
		return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
	}
}

// relative says how far t is from now: "in 5m" or "3s ago".
func relative(t, now time.Time) string {
	if d := t.Sub(now); d > 0 {
		return "in " + short(d)
	}
	return short(now.Sub(t)) + " ago"
}

// stampLayout is how the console prints an instant.
const stampLayout = "2006-01-02 15:04:05"

// compactJSON removes insignificant whitespace from stored JSON.
func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

// prettyJSON indents a JSON document; a value that is not JSON comes back
// as it is.
func prettyJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return string(raw)
	}
	return b.String()
}

// fit makes s exactly height lines of at most width cells: long lines are
// cut, missing lines are blank.
func fit(s string, width, height int) string {
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

// shortKey is the first 12 characters of a ledger key, as agentctl show
// prints it.
func shortKey(k string) string {
	if len(k) > 12 {
		return k[:12]
	}
	return k
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

// plural is n and a noun, in the plural unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
