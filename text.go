package agentledger

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// SafeText makes s storable in a PostgreSQL text column: NUL bytes and
// invalid UTF-8 (which PostgreSQL rejects) become U+FFFD. Error messages
// from downstreams and handlers pass through it, so one odd byte cannot
// make an outcome unrecordable.
func SafeText(s string) string {
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// SafeJSON makes raw storable as jsonb, which rejects the \u0000 escape:
// such characters become U+FFFD. Other JSON is returned unchanged.
func SafeJSON(raw json.RawMessage) json.RawMessage {
	if !bytes.Contains(raw, []byte(`\u0000`)) {
		return raw
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return raw // not JSON: the caller's validation says so
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(scrub(v)); err != nil {
		return raw
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}

func scrub(v any) any {
	switch x := v.(type) {
	case string:
		return strings.ReplaceAll(x, "\x00", "\uFFFD")
	case []any:
		for i := range x {
			x[i] = scrub(x[i])
		}
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[strings.ReplaceAll(k, "\x00", "\uFFFD")] = scrub(e)
		}
		return out
	}
	return v
}

// Clip is s, a value taken from a request, cut for an error that echoes
// it: whole up to 64 bytes; past that its first 64 bytes (on a rune
// boundary), an ellipsis and its length, so a 900 KB name is not sent
// back whole.
func Clip(s string) string {
	const most = 64
	if len(s) <= most {
		return s
	}
	cut := most
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", s[:cut], len(s))
}

// DurationText is d as a person writes it: 2160h, 1h30m, 45s, not
// Go's 2160h0m0s.
func DurationText(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
