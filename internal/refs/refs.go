// Package refs substitutes ${…} references in JSON arguments with parts of
// earlier results: the steps kind's ${steps.N.…} and a compensation's
// ${self.…} share it.
package refs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/ledger"
)

// Lookup returns the value of one match of a reference pattern.
type Lookup func(match []string) (any, error)

// Resolve substitutes the matches of re in the strings of args: a string
// that is exactly one reference becomes the referenced JSON value (object,
// number, …); a reference inside a longer string becomes its text. Errors
// are permanent: the same arguments fail the same way every time.
func Resolve(args json.RawMessage, re *regexp.Regexp, lookup Lookup) (json.RawMessage, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, bad("args: %v", err)
	}
	out, err := walk(v, re, lookup)
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

// Find returns the matches of re in the strings of args, valid JSON, as
// Resolve sees them: decoded, so that a reference written with a JSON
// escape (\u0024{steps.0.body}) is checked like any other.
func Find(args json.RawMessage, re *regexp.Regexp) [][]string {
	if !bytes.Contains(args, []byte(`\u`)) {
		// No \u escape: the other escapes cannot make or break a match.
		return re.FindAllStringSubmatch(string(args), -1)
	}
	var out [][]string
	dec := json.NewDecoder(bytes.NewReader(args))
	for {
		tok, err := dec.Token()
		if err != nil {
			return out
		}
		if s, ok := tok.(string); ok {
			out = append(out, re.FindAllStringSubmatch(s, -1)...)
		}
	}
}

func walk(v any, re *regexp.Regexp, lookup Lookup) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			r, err := walk(e, re, lookup)
			if err != nil {
				return nil, err
			}
			x[k] = r
		}
		return x, nil
	case []any:
		for i, e := range x {
			r, err := walk(e, re, lookup)
			if err != nil {
				return nil, err
			}
			x[i] = r
		}
		return x, nil
	case string:
		return substitute(x, re, lookup)
	}
	return v, nil
}

// substitute resolves the references in one string.
func substitute(s string, re *regexp.Regexp, lookup Lookup) (any, error) {
	if m := re.FindStringSubmatch(s); m != nil && m[0] == s {
		return lookup(m)
	}
	var firstErr error
	out := re.ReplaceAllStringFunc(s, func(ref string) string {
		v, err := lookup(re.FindStringSubmatch(ref))
		if err != nil {
			firstErr = err
			return ""
		}
		if str, ok := v.(string); ok {
			return str
		}
		b, _ := json.Marshal(v)
		return string(b)
	})
	return out, firstErr
}

// Path follows path (".a.0.b": keys and array indexes) into cur, for
// reference ref; whose names cur's owner in errors ("step 0's").
func Path(ref, whose string, cur any, path string) (any, error) {
	for _, seg := range strings.Split(strings.TrimPrefix(path, "."), ".") {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[seg]
			if !ok {
				return nil, bad("%s: %s result has no %q", ref, whose, seg)
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(c) {
				return nil, bad("%s: %q is not an index of a %d-element array", ref, seg, len(c))
			}
			cur = c[i]
		default:
			return nil, bad("%s: cannot look %q up in a %T", ref, seg, cur)
		}
	}
	return cur, nil
}

// View is what references see of an effect's result: {"status", "body",
// "external_ref"}, numbers kept exact.
func View(res ledger.Result) (any, error) {
	m := map[string]any{"status": json.Number(fmt.Sprint(res.Status)), "external_ref": res.ExternalRef, "body": nil}
	if len(res.Body) > 0 {
		dec := json.NewDecoder(bytes.NewReader(res.Body))
		dec.UseNumber()
		var body any
		if err := dec.Decode(&body); err != nil {
			return nil, fmt.Errorf("stored result is not JSON: %w", err)
		}
		m["body"] = body
	}
	return m, nil
}

// CheckPath checks that a reference's path names a part of a result.
func CheckPath(path string) bool {
	p := strings.Split(strings.TrimPrefix(path, "."), ".")
	return path != "" && (p[0] == "status" || p[0] == "body" || p[0] == "external_ref")
}

func bad(format string, args ...any) error {
	return agentledger.Permanent(fmt.Errorf(format, args...))
}
