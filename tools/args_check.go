package tools

import "encoding/json"

// ArgsChecker is a tool whose arguments have rules a JSON Schema does not
// say (a duration's bounds, a time's format): CheckArgs checks literal
// arguments — a steps payload's, before any template is resolved — so the
// door refuses a task that would fail for its arguments alone, naming the
// field, before anything is stored. Effect checks them again at run.
type ArgsChecker interface {
	CheckArgs(args json.RawMessage) error
}
