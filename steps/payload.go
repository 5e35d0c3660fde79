package steps

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/internal/refs"
	"github.com/agentledger/agentledger/saga"
	"github.com/agentledger/agentledger/tools"
)

// MaxSteps bounds one task's list.
const MaxSteps = 100

// Step is one declared tool call, and the call that undoes it.
type Step struct {
	Tool string          `json:"tool"`
	Args json.RawMessage `json:"args"`
	// Compensate, when set, undoes the step once it completed, if the task
	// then ends dead or cancelled (or an operator asks). Its args may use
	// ${self.…} (this step's result) and ${steps.N.…} of earlier steps.
	Compensate *saga.Compensation `json:"compensate,omitempty"`
	// Approve, when set, makes the step wait for a person's decision
	// before it is performed (package approvals): true, or {"approvers":
	// […], "timeout": "2h", "on_timeout": "deny"|"approve"}.
	Approve *tools.Approval `json:"-"`
}

// Payload is a steps task's payload.
type Payload struct {
	Steps []Step `json:"steps"`
}

// refRE matches ${steps.N.path}; path segments are keys or array indexes.
var refRE = regexp.MustCompile(`\$\{steps\.(\d+)((?:\.[A-Za-z0-9_-]+)*)\}`)

// parse decodes and checks a payload before anything runs: a bad payload is
// a permanent failure with nothing performed. Its messages speak of the
// payload as written (no Go types), so a submitter can act on them.
func parse(raw json.RawMessage) (*Payload, error) {
	const shape = `{"steps": [{"tool": …, "args": {…}}, …]}`
	if !json.Valid(raw) {
		return nil, bad("payload is not JSON")
	}
	top, err := object(raw, "payload", shape, "steps")
	if err != nil {
		return nil, err
	}
	var list []json.RawMessage
	if s, ok := top["steps"]; ok && jsonType(s) != "null" {
		if t := jsonType(s); t != "an array" {
			return nil, bad("\"steps\" must be an array [{\"tool\": …, \"args\": {…}}, …], not %s", t)
		}
		_ = json.Unmarshal(s, &list) // an array of valid JSON
	}
	if len(list) == 0 || len(list) > MaxSteps {
		return nil, bad("payload needs 1 to %d steps, has %d", MaxSteps, len(list))
	}
	p := Payload{Steps: make([]Step, len(list))}
	for i, raw := range list {
		if p.Steps[i], err = parseStep(i, raw); err != nil {
			return nil, err
		}
	}
	return &p, nil
}

// parseStep decodes and checks step i: its tool, its arguments (absent or
// null: {}) and their references.
func parseStep(i int, raw json.RawMessage) (Step, error) {
	var s Step
	subject := fmt.Sprintf("step %d", i)
	f, err := object(raw, subject, `{"tool": …, "args": {…}, "compensate": {…}, "approve": …}`, "approve", "args", "compensate", "tool")
	if err != nil {
		return s, err
	}
	if s.Approve, err = tools.ParseApproval(f["approve"]); err != nil {
		return s, bad("%s: %v", subject, err)
	}
	if s.Tool, s.Args, err = toolCall(subject, f); err != nil {
		return s, err
	}
	if saga.References(s.Args) {
		return s, bad("step %d: ${self…} may be used only in a compensation", i)
	}
	if err := checkRefs(subject, s.Args, i-1); err != nil {
		return s, err
	}
	switch t := jsonType(f["compensate"]); t {
	case "", "null":
		return s, nil
	case "an object":
	default:
		return s, bad("step %d: compensate must be an object {\"tool\": …, \"args\": {…}}, not %s", i, t)
	}
	subject += "'s compensation"
	cf, err := object(f["compensate"], subject, `{"tool": …, "args": {…}}`, "args", "tool")
	if err != nil {
		return s, err
	}
	c := &saga.Compensation{}
	if c.Tool, c.Args, err = toolCall(subject, cf); err != nil {
		return s, err
	}
	if err := checkRefs(subject, c.Args, i-1); err != nil {
		return s, err
	}
	if err := c.Check(); err != nil {
		return s, bad("%s: %v", subject, err)
	}
	s.Compensate = c
	return s, nil
}

// toolCall reads the tool and args fields of a call (args absent or null:
// {}); subject names the call in errors.
func toolCall(subject string, f map[string]json.RawMessage) (tool string, args json.RawMessage, err error) {
	switch t := jsonType(f["tool"]); t {
	case "", "null":
	case "a string":
		_ = json.Unmarshal(f["tool"], &tool)
	default:
		return "", nil, bad("%s: tool must be a string, not %s", subject, t)
	}
	if tool == "" {
		return "", nil, bad("%s: tool is required", subject)
	}
	switch t := jsonType(f["args"]); t {
	case "", "null":
		args = json.RawMessage(`{}`) // what the tool is called with
	case "an object":
		args = f["args"]
	default:
		return "", nil, bad("%s: args must be an object, not %s", subject, t)
	}
	return tool, args, nil
}

// checkRefs checks the references of args: each names a step up to last
// and a part of its result.
func checkRefs(subject string, args json.RawMessage, last int) error {
	for _, m := range refs.Find(args, refRE) {
		n, err := strconv.Atoi(m[1])
		if err != nil || n > last {
			return bad("%s: %s refers to step %s, which does not run before it", subject, m[0], m[1])
		}
		if !refs.CheckPath(m[2]) {
			return bad("%s: %s must name status, body[.path] or external_ref", subject, m[0])
		}
	}
	return nil
}

// object decodes raw, valid JSON that must be an object of the shape
// given, with only the fields known; subject names it in errors.
func object(raw json.RawMessage, subject, shape string, known ...string) (map[string]json.RawMessage, error) {
	if t := jsonType(raw); t != "an object" {
		return nil, bad("%s must be an object %s, not %s", subject, shape, t)
	}
	var f map[string]json.RawMessage
	_ = json.Unmarshal(raw, &f) // an object of valid JSON
	names := make([]string, 0, len(f))
	for name := range f {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if !slices.Contains(known, name) {
			return nil, bad("%s has an unknown field %q (known: %s)", subject, name, strings.Join(known, ", "))
		}
	}
	return f, nil
}

// jsonType names the type of raw, valid JSON with its article ("an
// object", "a string", "null"); "" for nothing.
func jsonType(raw json.RawMessage) string {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return ""
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// references reports whether args refer to earlier results: their value
// is known only when the step runs.
func references(args json.RawMessage) bool { return len(refs.Find(args, refRE)) > 0 }

func bad(format string, args ...any) error {
	return agentledger.Permanent(fmt.Errorf("steps: "+format, args...))
}

// resolve substitutes references to earlier results in args (each the
// JSON of {"status", "body", "external_ref"}).
func resolve(args json.RawMessage, results []any) (json.RawMessage, error) {
	out, err := refs.Resolve(args, refRE, func(m []string) (any, error) {
		n, _ := strconv.Atoi(m[1])
		return refs.Path(m[0], fmt.Sprintf("step %d's", n), results[n], m[2])
	})
	if err != nil {
		return nil, fmt.Errorf("steps: %w", err)
	}
	return out, nil
}
