package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/agentledger/agentledger/render"
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

// The plain text agentctl shares with the console, under the names this
// package's code calls it by.
var (
	oneLine  = render.OneLine
	truncate = render.Truncate
	orDash   = render.OrDash
	relative = render.Relative
	short    = render.Short
	shortKey = render.ShortKey
	pretty   = render.PrettyJSON
	compact  = render.CompactJSON
	plural   = render.Plural[int64]
)

// stamp formats t for people: RFC 3339 in the local zone, to the second.
func stamp(t time.Time) string { return t.Local().Format(time.RFC3339) }

// stampPtr is stamp for an optional time; nil is "-".
func stampPtr(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return stamp(*t)
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
