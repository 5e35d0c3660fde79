package steps

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/agentledger/agentledger"
)

// MaxSteps bounds one task's list.
const MaxSteps = 100

// Step is one declared tool call.
type Step struct {
	Tool string          `json:"tool"`
	Args json.RawMessage `json:"args"`
}

// Payload is a steps task's payload.
type Payload struct {
	Steps []Step `json:"steps"`
}

// refRE matches ${steps.N.path}; path segments are keys or array indexes.
var refRE = regexp.MustCompile(`\$\{steps\.(\d+)((?:\.[A-Za-z0-9_-]+)*)\}`)

// parse decodes and checks a payload before anything runs: a bad payload is
// a permanent failure with nothing performed.
func parse(raw json.RawMessage) (*Payload, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var p Payload
	if err := dec.Decode(&p); err != nil {
		return nil, bad("payload must be {\"steps\": [{\"tool\": …, \"args\": {…}}, …]}: %v", err)
	}
	if len(p.Steps) == 0 || len(p.Steps) > MaxSteps {
		return nil, bad("payload needs 1 to %d steps, has %d", MaxSteps, len(p.Steps))
	}
	for i, s := range p.Steps {
		if s.Tool == "" {
			return nil, bad("step %d: tool is required", i)
		}
		if len(s.Args) == 0 {
			p.Steps[i].Args = json.RawMessage(`{}`)
		}
		for _, m := range refRE.FindAllStringSubmatch(string(s.Args), -1) {
			n, err := strconv.Atoi(m[1])
			if err != nil || n >= i {
				return nil, bad("step %d: %s refers to step %s, which does not run before it", i, m[0], m[1])
			}
			if path := strings.Split(strings.TrimPrefix(m[2], "."), "."); m[2] == "" ||
				(path[0] != "status" && path[0] != "body" && path[0] != "external_ref") {
				return nil, bad("step %d: %s must name status, body[.path] or external_ref", i, m[0])
			}
		}
	}
	return &p, nil
}

func bad(format string, args ...any) error {
	return agentledger.Permanent(fmt.Errorf("steps: "+format, args...))
}

// resolve substitutes references in args with earlier results (each the
// JSON of {"status", "body", "external_ref"}).
func resolve(args json.RawMessage, results []any) (json.RawMessage, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, bad("args: %v", err)
	}
	out, err := walk(v, results)
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

func walk(v any, results []any) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			r, err := walk(e, results)
			if err != nil {
				return nil, err
			}
			x[k] = r
		}
		return x, nil
	case []any:
		for i, e := range x {
			r, err := walk(e, results)
			if err != nil {
				return nil, err
			}
			x[i] = r
		}
		return x, nil
	case string:
		return substitute(x, results)
	}
	return v, nil
}

// substitute resolves the references in one string.
func substitute(s string, results []any) (any, error) {
	if m := refRE.FindStringSubmatch(s); m != nil && m[0] == s {
		return lookup(m, results)
	}
	var firstErr error
	out := refRE.ReplaceAllStringFunc(s, func(ref string) string {
		v, err := lookup(refRE.FindStringSubmatch(ref), results)
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

func lookup(m []string, results []any) (any, error) {
	n, _ := strconv.Atoi(m[1])
	var cur any = results[n]
	for _, seg := range strings.Split(strings.TrimPrefix(m[2], "."), ".") {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[seg]
			if !ok {
				return nil, bad("%s: step %d's result has no %q", m[0], n, seg)
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(c) {
				return nil, bad("%s: %q is not an index of a %d-element array", m[0], seg, len(c))
			}
			cur = c[i]
		default:
			return nil, bad("%s: cannot look %q up in a %T", m[0], seg, cur)
		}
	}
	return cur, nil
}
