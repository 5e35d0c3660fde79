package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/agentledger/agentledger"
)

// checkFieldNames refuses a body object whose top-level keys name a field
// of v (a pointer to a struct) other than exactly, or name one twice.
// encoding/json matches keys to fields ignoring case and keeps the last
// of several: {"kind":"","kiNd":"b"} would submit kind "b", and the same
// object with its keys in another order kind "" — two answers for what a
// request's fingerprint, which does not depend on the keys' order, calls
// one request. A key that names no field at all is left to the decoder's
// unknown-field error. (Through Server.check a key given twice is refused
// before this, as malformed: the fingerprint's canonical JSON has no
// duplicate keys; the check here holds for any caller of decodeBody.) The
// body is a JSON object (decodeBody checked its first byte); one that does
// not parse is left to the decoder too.
func checkFieldNames(body []byte, v any) error {
	names := fieldNames(reflect.TypeOf(v))
	if len(names) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if _, err := dec.Token(); err != nil { // the object's {
		return nil
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil
		}
		key, _ := t.(string)
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil
		}
		if !names[key] {
			for name := range names {
				if strings.EqualFold(name, key) {
					return agentledger.Invalid(agentledger.Clip(key), "is not a field of this request: field names are matched exactly (%q)", name)
				}
			}
			continue
		}
		if why := badEscape(value); why != "" {
			// Text PostgreSQL cannot store, or that decoding would change
			// (a lone surrogate becomes U+FFFD): refused, not stored
			// otherwise than sent.
			return agentledger.Invalid(key, "holds %s", why)
		}
		if seen[key] {
			return agentledger.Invalid(key, "is given twice")
		}
		seen[key] = true
	}
	return nil
}

// fieldNames returns the JSON names of the fields of the struct t points
// to (its json tags, or the field names), nil for anything else, and for
// a struct that embeds another (whose fields encoding/json promotes: not
// followed here, so not checked).
func fieldNames(t reflect.Type) map[string]bool {
	if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil
	}
	t = t.Elem()
	names := map[string]bool{}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			return nil
		}
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		names[name] = true
	}
	return names
}

// badEscape says what in value, when it is a JSON string, no text column
// takes as sent: a \u0000 escape, or a UTF-16 surrogate escape without its
// pair; "" for anything else.
func badEscape(value json.RawMessage) string {
	if len(value) == 0 || value[0] != '"' {
		return ""
	}
	for i := 1; i < len(value); i++ {
		if value[i] != '\\' {
			continue
		}
		i++
		if i >= len(value) || value[i] != 'u' || i+4 >= len(value) {
			continue // \" \\ \n …: one character, skipped
		}
		code, err := strconv.ParseUint(string(value[i+1:i+5]), 16, 16)
		if err != nil {
			continue
		}
		i += 4
		switch {
		case code == 0:
			return `a NUL character (\u0000), which text cannot store`
		case code >= 0xDC00 && code <= 0xDFFF:
			return fmt.Sprintf(`a lone surrogate escape (\u%04x)`, code)
		case code >= 0xD800 && code <= 0xDBFF:
			// A high surrogate stands only before a low one.
			next := i + 1
			if next+5 < len(value) && value[next] == '\\' && value[next+1] == 'u' {
				if low, err := strconv.ParseUint(string(value[next+2:next+6]), 16, 16); err == nil && low >= 0xDC00 && low <= 0xDFFF {
					i = next + 5
					continue
				}
			}
			return fmt.Sprintf(`a lone surrogate escape (\u%04x)`, code)
		}
	}
	return ""
}
