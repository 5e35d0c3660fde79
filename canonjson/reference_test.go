package canonjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
)

// The canonical form as it was first written: encoding/json decodes the
// document into map[string]any, a token walk refuses duplicate keys, and
// write encodes it again. Marshal must agree with it byte for byte on
// every input (FuzzMarshalMatchesReference): the ledger stores request
// hashes of this form, and a replay of a task recorded before must find
// the same hash.

// referenceMarshal is Marshal as it was first written.
func referenceMarshal(in []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(in))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("canonjson: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("canonjson: trailing data after JSON value")
	}
	if err := refCheckDuplicateKeys(in); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := refWrite(&buf, v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func refWrite(buf *bytes.Buffer, v any) error {
	switch x := v.(type) {
	case nil:
		buf.WriteString("null")
	case bool:
		if x {
			buf.WriteString("true")
		} else {
			buf.WriteString("false")
		}
	case json.Number:
		buf.WriteString(string(x))
	case string:
		refWriteString(buf, x)
	case []any:
		buf.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := refWrite(buf, e); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys) // Go compares strings bytewise: UTF-8 order
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			refWriteString(buf, k)
			buf.WriteByte(':')
			if err := refWrite(buf, x[k]); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	default:
		return fmt.Errorf("canonjson: unexpected %T", v)
	}
	return nil
}

func refWriteString(buf *bytes.Buffer, s string) {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)           // encoding a string cannot fail
	buf.Truncate(buf.Len() - 1) // Encode appends a newline
}

// refCheckDuplicateKeys walks the token stream: the decoder into map[string]any
// would silently keep the last of two equal keys.
func refCheckDuplicateKeys(in []byte) error {
	dec := json.NewDecoder(bytes.NewReader(in))
	dec.UseNumber()
	type frame struct {
		obj  bool
		seen map[string]bool
		key  bool // next string token in an object is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("canonjson: %w", err)
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{':
				stack = append(stack, &frame{obj: true, seen: map[string]bool{}, key: true})
			case '[':
				stack = append(stack, &frame{})
			default:
				stack = stack[:len(stack)-1]
				if len(stack) > 0 && stack[len(stack)-1].obj {
					stack[len(stack)-1].key = true
				}
			}
			continue
		}
		if top == nil || !top.obj {
			continue
		}
		if top.key {
			k := tok.(string)
			if top.seen[k] {
				return fmt.Errorf("canonjson: duplicate object key %q", k)
			}
			top.seen[k] = true
			top.key = false
		} else {
			top.key = true
		}
	}
}

// FuzzMarshalMatchesReference checks Marshal against the reference on any
// bytes: the same canonical form, or an error from both.
func FuzzMarshalMatchesReference(f *testing.F) {
	for _, in := range append(slices.Clone(rejected), sameAsReference...) {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := Marshal(in)
		want, refErr := referenceMarshal(in)
		switch {
		case (err == nil) != (refErr == nil):
			t.Fatalf("Marshal(%q) = %q, %v; the reference %q, %v", in, got, err, want, refErr)
		case err == nil && !bytes.Equal(got, want):
			t.Fatalf("Marshal(%q) = %q; the reference %q", in, got, want)
		}
	})
}

// sameAsReference are inputs whose form the reference decides in ways a
// scanner could get wrong: escapes, invalid UTF-8, lone surrogates, the
// line and paragraph separators, keys equal only once decoded, numbers
// kept as written, nesting, whitespace.
var sameAsReference = []string{
	`{"b":1,"a":[true,false,null],"c":{"z":"\u00e9","y":-0.5e+10}}`,
	`{"a\u0062":1,"ab":2}`,
	`"\ud800"`, `"\ud83d\ude00"`, `"\udc00\ud800"`, "\"\xff\xfe\"", "\"\xed\xa0\x80\"",
	"\"\u2028\u2029\"", `"\/\b\f\n\r\t\"\\"`, `"<&>"`, "\"\x7f\"",
	` [ 1 , 2.0 , 1E3 , -0 , 0.10 ] `, `{"k":{}, "j":[], "i":""}`, `[[[[[]]]]]`,
	`{"é":1,"e":2,"z":3,"Z":4}`, `01`, `1.`, `-`, `1e`, `tru`, `"a`, `"\x"`, `"\u12"`, "\"a\tb\"",
	`{"a":1,}`, `[1,]`, `{"a" 1}`, `{1:2}`, `{"a":1 "b":2}`,
}

func TestMarshalMatchesReference(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth)
	deeper := strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1)
	for _, in := range append(append(slices.Clone(rejected), sameAsReference...), deep, deeper) {
		got, err := Marshal([]byte(in))
		want, refErr := referenceMarshal([]byte(in))
		if (err == nil) != (refErr == nil) || !bytes.Equal(got, want) {
			t.Errorf("Marshal(%.40q) = %.40q, %v; the reference %.40q, %v", in, got, err, want, refErr)
		}
	}
}

func BenchmarkMarshal(b *testing.B) {
	in := []byte(`{"method":"POST","url":"http://127.0.0.1:8080/charges","body":{"order":7,"amount":1500,"currency":"eur"},"headers":{}}`)
	for _, impl := range []struct {
		name string
		f    func([]byte) ([]byte, error)
	}{{"scan", Marshal}, {"reference", referenceMarshal}} {
		b.Run(impl.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := impl.f(in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
