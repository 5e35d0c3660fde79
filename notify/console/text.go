package console

import (
	"strconv"
	"strings"
	"unicode"

	"github.com/agentledger/agentledger/notify"
)

// readable is the console form of m in channel ch, with tag (the key of a
// post) at the end or, for an edit, edit (the ref it replaces) up front:
//
//	[notify #ops] Task 42 succeeded — all rows loaded [task=42 state=succeeded] (key al1-0123456789ab…)
//	[notify #ops] (edit of notify.jsonl:3) Task 42 failed — timeout [task=42 state=failed]
//
// A bare message reads "[notify #ops] text (key …)"; further lines of the
// text are indented.
func readable(ch string, m notify.Message, edit, key string) string {
	if !strings.HasPrefix(ch, "#") {
		ch = "#" + ch
	}
	var parts []string
	if t := strings.TrimSpace(m.Title); t != "" {
		parts = append(parts, t)
	}
	if m.Text != "" || len(parts) == 0 {
		parts = append(parts, m.Text)
	}
	body := strings.Join(parts, " — ")
	if f := compactFields(m.Fields); f != "" {
		body += " [" + f + "]"
	}
	body = strings.ReplaceAll(body, "\n", "\n    ")
	if edit != "" {
		return "[notify " + ch + "] (edit of " + edit + ") " + body
	}
	return "[notify " + ch + "] " + body + " (key " + notify.ShortKey(key) + ")"
}

// compactFields reads "task=42 state=succeeded": labels in lower case
// with "_" for spaces, values quoted when they hold spaces or quotes or
// are empty, so the pairs stay apart.
func compactFields(fs []notify.Field) string {
	var b strings.Builder
	for _, f := range fs {
		if f.Label == "" && f.Value == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strings.ReplaceAll(strings.ToLower(strings.TrimSpace(f.Label)), " ", "_"))
		b.WriteByte('=')
		v := f.Value
		if v == "" || strings.ContainsFunc(v, func(r rune) bool { return r <= ' ' || r == 0x7f || unicode.IsSpace(r) || r == '"' }) {
			v = strconv.Quote(v)
		}
		b.WriteString(v)
	}
	return b.String()
}
