package canonjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"unicode/utf8"
)

// maxDepth is encoding/json's nesting limit, which the canonical form has
// always had.
const maxDepth = 10000

// canonicalizer writes the canonical form of in to out as it reads it:
// whitespace dropped, numbers and plain strings copied, escaped strings
// decoded and re-escaped as encoding/json does, each object's members
// reordered by key once read. Its output is the reference's byte for byte
// (reference_test.go).
type canonicalizer struct {
	in  []byte
	pos int
	out []byte
}

// member is one object member as written to out: its decoded key and the
// span of `"key":value`.
type member struct {
	key        string
	start, end int
}

func (c *canonicalizer) space() {
	for c.pos < len(c.in) {
		switch c.in[c.pos] {
		case ' ', '\t', '\n', '\r':
			c.pos++
		default:
			return
		}
	}
}

func (c *canonicalizer) errorf(format string, args ...any) error {
	return fmt.Errorf("canonjson: "+format+" at offset %d", append(args, c.pos)...)
}

func (c *canonicalizer) value(depth int) error {
	if c.pos == len(c.in) {
		return c.errorf("unexpected end of JSON input")
	}
	switch b := c.in[c.pos]; {
	case b == '{':
		if depth >= maxDepth {
			return c.errorf("exceeded max depth")
		}
		return c.object(depth + 1)
	case b == '[':
		if depth >= maxDepth {
			return c.errorf("exceeded max depth")
		}
		return c.array(depth + 1)
	case b == '"':
		_, err := c.str()
		return err
	case b == '-' || b >= '0' && b <= '9':
		return c.number()
	case b == 't':
		return c.literal("true")
	case b == 'f':
		return c.literal("false")
	case b == 'n':
		return c.literal("null")
	}
	return c.errorf("invalid character %q looking for beginning of value", c.in[c.pos])
}

func (c *canonicalizer) literal(word string) error {
	if !bytes.HasPrefix(c.in[c.pos:], []byte(word)) {
		return c.errorf("invalid literal")
	}
	c.pos += len(word)
	c.out = append(c.out, word...)
	return nil
}

// number copies a JSON number as written (json.Number keeps its text).
func (c *canonicalizer) number() error {
	start := c.pos
	if c.in[c.pos] == '-' {
		c.pos++
	}
	switch {
	case c.pos < len(c.in) && c.in[c.pos] == '0':
		c.pos++
	case c.pos < len(c.in) && c.in[c.pos] >= '1' && c.in[c.pos] <= '9':
		c.digits()
	default:
		return c.errorf("invalid number")
	}
	if c.pos < len(c.in) && c.in[c.pos] == '.' {
		c.pos++
		if c.digits() == 0 {
			return c.errorf("invalid number")
		}
	}
	if c.pos < len(c.in) && (c.in[c.pos] == 'e' || c.in[c.pos] == 'E') {
		c.pos++
		if c.pos < len(c.in) && (c.in[c.pos] == '+' || c.in[c.pos] == '-') {
			c.pos++
		}
		if c.digits() == 0 {
			return c.errorf("invalid number")
		}
	}
	c.out = append(c.out, c.in[start:c.pos]...)
	return nil
}

func (c *canonicalizer) digits() int {
	start := c.pos
	for c.pos < len(c.in) && c.in[c.pos] >= '0' && c.in[c.pos] <= '9' {
		c.pos++
	}
	return c.pos - start
}

// str writes the string at c.pos and returns it decoded. A string that
// is written as encoding/json would write it — no escape, valid UTF-8, no
// U+2028 or U+2029 — is copied; any other is decoded by encoding/json
// and written again, which is rare and keeps its exact rules (lone
// surrogates and invalid bytes become U+FFFD).
func (c *canonicalizer) str() (string, error) {
	start := c.pos
	c.pos++ // the opening quote
	plain := true
	for {
		if c.pos == len(c.in) {
			return "", c.errorf("unexpected end of JSON input in a string")
		}
		b := c.in[c.pos]
		switch {
		case b == '"':
			c.pos++
			raw := c.in[start:c.pos]
			if plain {
				c.out = append(c.out, raw...)
				return string(raw[1 : len(raw)-1]), nil
			}
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return "", fmt.Errorf("canonjson: %w", err)
			}
			c.out = appendString(c.out, s)
			return s, nil
		case b < 0x20:
			return "", c.errorf("invalid character %q in string literal", b)
		case b == '\\':
			plain = false
			c.pos++
			if c.pos == len(c.in) {
				return "", c.errorf("unexpected end of JSON input in a string")
			}
			switch c.in[c.pos] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				c.pos++
			case 'u':
				if c.pos+5 > len(c.in) || !hex4(c.in[c.pos+1:c.pos+5]) {
					return "", c.errorf("invalid \\u escape in string literal")
				}
				c.pos += 5
			default:
				return "", c.errorf("invalid escape in string literal")
			}
		case b < utf8.RuneSelf:
			c.pos++
		default:
			r, size := utf8.DecodeRune(c.in[c.pos:])
			if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
				plain = false
			}
			c.pos += size
		}
	}
}

func hex4(b []byte) bool {
	for _, x := range b {
		if !(x >= '0' && x <= '9' || x >= 'a' && x <= 'f' || x >= 'A' && x <= 'F') {
			return false
		}
	}
	return true
}

// appendString appends s as encoding/json writes it without HTML escaping.
func appendString(out []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // encoding a string cannot fail
	return append(out, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}

func (c *canonicalizer) array(depth int) error {
	c.pos++
	c.out = append(c.out, '[')
	c.space()
	if c.pos < len(c.in) && c.in[c.pos] == ']' {
		c.pos++
		c.out = append(c.out, ']')
		return nil
	}
	for {
		c.space()
		if err := c.value(depth); err != nil {
			return err
		}
		c.space()
		if c.pos == len(c.in) {
			return c.errorf("unexpected end of JSON input in an array")
		}
		switch c.in[c.pos] {
		case ',':
			c.pos++
			c.out = append(c.out, ',')
		case ']':
			c.pos++
			c.out = append(c.out, ']')
			return nil
		default:
			return c.errorf("invalid character %q after array element", c.in[c.pos])
		}
	}
}

func (c *canonicalizer) object(depth int) error {
	c.pos++
	open := len(c.out)
	c.out = append(c.out, '{')
	c.space()
	if c.pos < len(c.in) && c.in[c.pos] == '}' {
		c.pos++
		c.out = append(c.out, '}')
		return nil
	}
	var members []member
	for {
		c.space()
		if c.pos == len(c.in) || c.in[c.pos] != '"' {
			return c.errorf("looking for beginning of object key string")
		}
		start := len(c.out)
		key, err := c.str()
		if err != nil {
			return err
		}
		c.space()
		if c.pos == len(c.in) || c.in[c.pos] != ':' {
			return c.errorf("after object key")
		}
		c.pos++
		c.out = append(c.out, ':')
		c.space()
		if err := c.value(depth); err != nil {
			return err
		}
		members = append(members, member{key: key, start: start, end: len(c.out)})
		c.space()
		if c.pos == len(c.in) {
			return c.errorf("unexpected end of JSON input in an object")
		}
		switch c.in[c.pos] {
		case ',':
			c.pos++
			c.out = append(c.out, ',')
			continue
		case '}':
			c.pos++
		default:
			return c.errorf("invalid character %q after object key:value pair", c.in[c.pos])
		}
		break
	}
	return c.order(open, members)
}

// order rewrites the members of the object opened at out[open] in key
// order, refusing a duplicate key, and closes it.
func (c *canonicalizer) order(open int, members []member) error {
	sorted := slices.IsSortedFunc(members, func(a, b member) int { return cmpKey(a.key, b.key) })
	if !sorted {
		slices.SortStableFunc(members, func(a, b member) int { return cmpKey(a.key, b.key) })
	}
	for i := 1; i < len(members); i++ {
		if members[i].key == members[i-1].key {
			return &DuplicateKeyError{Key: members[i].key}
		}
	}
	if sorted {
		c.out = append(c.out, '}')
		return nil
	}
	written := slices.Clone(c.out[open+1:])
	c.out = c.out[:open+1]
	for i, m := range members {
		if i > 0 {
			c.out = append(c.out, ',')
		}
		c.out = append(c.out, written[m.start-open-1:m.end-open-1]...)
	}
	c.out = append(c.out, '}')
	return nil
}

// cmpKey orders keys by their UTF-8 bytes, as Go compares strings.
func cmpKey(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
