package render

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

var oneLiner = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ", "\t", " ")

// OneLine replaces line breaks and tabs so a value fits one line (a table
// cell).
func OneLine(s string) string { return oneLiner.Replace(s) }

// Truncate shortens s to at most n characters on one line, marking a cut
// with "…".
func Truncate(s string, n int) string {
	r := []rune(OneLine(s))
	if len(r) <= n {
		return string(r)
	}
	return string(r[:n-1]) + "…"
}

// OrDash returns s, or "-" when it is empty.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// ShortKey is the first 12 characters of an effect key, as journals show
// them and agentctl ledger --key takes them.
func ShortKey(key string) string {
	if len(key) > 12 {
		return key[:12]
	}
	return key
}

// CompactJSON removes insignificant whitespace from stored JSON; a value
// that is not JSON comes back as it is.
func CompactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

// PrettyJSON indents a JSON document for display, every line after
// prefix; a value that is not JSON comes back as it is.
func PrettyJSON(raw json.RawMessage, prefix string) string {
	var b bytes.Buffer
	if err := json.Indent(&b, raw, prefix, "  "); err != nil {
		return string(raw)
	}
	return prefix + b.String()
}

// Plural is n and a noun, in the plural unless n is 1: "1 task", "3 tasks".
func Plural[N ~int | ~int64](n N, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.FormatInt(int64(n), 10) + " " + noun + "s"
}
