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

// PrettyJSONScalarsFirst is PrettyJSON with each object's scalar members
// (strings, numbers, booleans, null) before its objects and arrays, each
// group in its own order: a preview cut to a few lines then shows an
// amount beside a long list of items rather than the list alone. JSON
// gives its members no order, so the document is the same one.
func PrettyJSONScalarsFirst(raw json.RawMessage, prefix string) string {
	if ordered, err := scalarsFirst(raw); err == nil {
		raw = ordered
	}
	return PrettyJSON(raw, prefix)
}

// scalarsFirst reorders the members of every object of raw, scalars first.
func scalarsFirst(raw json.RawMessage) (json.RawMessage, error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || (t[0] != '{' && t[0] != '[') {
		return t, nil
	}
	if t[0] == '[' {
		var items []json.RawMessage
		if err := json.Unmarshal(t, &items); err != nil {
			return nil, err
		}
		var b bytes.Buffer
		b.WriteByte('[')
		for i, it := range items {
			v, err := scalarsFirst(it)
			if err != nil {
				return nil, err
			}
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(v)
		}
		b.WriteByte(']')
		return b.Bytes(), nil
	}
	dec := json.NewDecoder(bytes.NewReader(t))
	if _, err := dec.Token(); err != nil { // {
		return nil, err
	}
	var scalars, composites bytes.Buffer
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if v, err = scalarsFirst(v); err != nil {
			return nil, err
		}
		var key bytes.Buffer
		enc := json.NewEncoder(&key)
		enc.SetEscapeHTML(false) // "<" stays as written
		_ = enc.Encode(k)
		group := &scalars
		if v[0] == '{' || v[0] == '[' {
			group = &composites
		}
		if group.Len() > 0 {
			group.WriteByte(',')
		}
		group.Write(bytes.TrimSuffix(key.Bytes(), []byte("\n")))
		group.WriteByte(':')
		group.Write(v)
	}
	var b bytes.Buffer
	b.WriteByte('{')
	b.Write(scalars.Bytes())
	if scalars.Len() > 0 && composites.Len() > 0 {
		b.WriteByte(',')
	}
	b.Write(composites.Bytes())
	b.WriteByte('}')
	return b.Bytes(), nil
}
