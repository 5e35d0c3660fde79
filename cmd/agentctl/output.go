package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// wantJSON reports whether the user asked for JSON output.
func (a *app) wantJSON() bool { return a.output == "json" }

// printJSON writes v as indented JSON, HTML characters left as they are.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// table writes aligned columns. Cells are kept on one line.
type table struct{ tw *tabwriter.Writer }

// newTable starts a table on w; header may be empty for label/value lists.
func newTable(w io.Writer, header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	if len(header) > 0 {
		t.row(header...)
	}
	return t
}

func (t *table) row(cells ...string) {
	for i, c := range cells {
		if i > 0 {
			io.WriteString(t.tw, "\t")
		}
		io.WriteString(t.tw, oneLine(c))
	}
	io.WriteString(t.tw, "\n")
}

func (t *table) flush() error { return t.tw.Flush() }

// oneLine replaces line breaks and tabs so a value fits one table cell.
func oneLine(s string) string {
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ", "\t", " ").Replace(s)
}

// truncate shortens s to at most n characters on one line, marking a cut
// with "…".
func truncate(s string, n int) string {
	r := []rune(oneLine(s))
	if len(r) <= n {
		return string(r)
	}
	return string(r[:n-1]) + "…"
}

// orDash returns s, or "-" when it is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// stamp formats t for people: RFC 3339 in the local zone, to the second.
func stamp(t time.Time) string { return t.Local().Format(time.RFC3339) }

// stampPtr is stamp for an optional time; nil is "-".
func stampPtr(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return stamp(*t)
}

// relative says how far t is from now: "in 5m" or "3s ago".
func relative(t, now time.Time) string {
	if d := t.Sub(now); d > 0 {
		return "in " + short(d)
	}
	return short(now.Sub(t)) + " ago"
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

// pretty indents a JSON document for display, every line after prefix; a
// value that is not JSON comes back as it is.
func pretty(raw json.RawMessage, prefix string) string {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, prefix, "  "); err != nil {
		return string(raw)
	}
	return prefix + buf.String()
}

// listed prints xs as JSON with --output json (an empty array, never
// null), or says none on standard error when there are none; done reports
// that it did either, leaving the table to the caller otherwise.
func listed[T any](a *app, xs []T, none string) (done bool, err error) {
	if a.wantJSON() {
		if xs == nil {
			xs = []T{}
		}
		return true, printJSON(a.stdout, xs)
	}
	if len(xs) == 0 {
		_, err := fmt.Fprintln(a.stderr, none)
		return true, err
	}
	return false, nil
}
