// Package saga undoes a task's completed effects: the compensation phase
// that any task kind enters when it ends dead or cancelled (or an operator
// asks) while effects that declared a compensation completed.
//
// A compensation is declared with the effect it undoes, as a tool call
// (Compensation) kept on the effect's ledger row (ledger.Effect.Compensate):
// the steps kind declares it per step, the agent kind per tool, a Go kind
// per call. Its arguments are a template over the undone effect's result
// (${self.body.id}, ${self.status}, ${self.external_ref}), resolved when it
// runs. The phase itself is the same for every kind (Undoer): read the
// journal, and run the compensations of the completed effects, newest
// completion first, each through the ledger at "compensate/<path>" of the
// effect it undoes — so its key is derived from the same task generation
// and step, every run of the phase finds it again, and a compensation done
// once is served, never done twice. An effect that failed is not undone;
// one of unknown outcome parks the task for an operator before anything is
// undone.
package saga

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/internal/refs"
	"github.com/agentledger/agentledger/ledger"
)

// Compensation is the tool call that undoes an effect.
type Compensation struct {
	Tool string `json:"tool"`
	// Args is the tool's arguments; strings may use ${self.…}, the undone
	// effect's result.
	Args json.RawMessage `json:"args,omitempty"`
}

// selfRE matches ${self.path}: the undone effect's result.
var selfRE = regexp.MustCompile(`\$\{self((?:\.[A-Za-z0-9_-]+)*)\}`)

// Check checks c before anything runs: a tool, object arguments, and
// references that name a part of a result. The error names no field; the
// caller says whose compensation it is.
func (c Compensation) Check() error {
	if c.Tool == "" {
		return agentledger.Permanent(fmt.Errorf("a compensation names no tool"))
	}
	if len(c.Args) > 0 {
		var v any
		if err := json.Unmarshal(c.Args, &v); err != nil {
			return agentledger.Permanent(fmt.Errorf("compensation args are not JSON: %v", err))
		}
		if _, ok := v.(map[string]any); !ok && v != nil {
			return agentledger.Permanent(fmt.Errorf("compensation args must be an object"))
		}
	}
	for _, m := range refs.Find(c.Args, selfRE) {
		if !refs.CheckPath(m[1]) {
			return agentledger.Permanent(fmt.Errorf("%s must name status, body[.path] or external_ref", m[0]))
		}
	}
	return nil
}

// Encode returns c as a ledger row keeps it (tools.Call.Compensate).
func (c Compensation) Encode() (json.RawMessage, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	if len(c.Args) == 0 {
		c.Args = json.RawMessage(`{}`)
	}
	return json.Marshal(c)
}

// References reports whether args refer to ${self…}, escaped or not: such
// arguments belong in a compensation only.
func References(args json.RawMessage) bool { return len(refs.Find(args, selfRE)) > 0 }

// PathOf is the journal place of the compensation of the effect at path.
func PathOf(path string) string { return ledger.CompensationPrefix + path }

// Undoes is the journal place of the effect that the compensation at path
// undoes; "", false when path is not a compensation's.
func Undoes(path string) (string, bool) {
	if undone, ok := strings.CutPrefix(path, ledger.CompensationPrefix); ok {
		return undone, true
	}
	return "", false
}

// ArgsFor is the arguments c is called with to undo e: its ${self…}
// references resolved against e's result, as the compensation phase
// resolves them. A preview shows them.
func (c Compensation) ArgsFor(e ledger.Entry) (json.RawMessage, error) {
	self, err := refs.View(e.Result)
	if err != nil {
		return nil, err
	}
	return c.resolve(self)
}

// resolve substitutes ${self…} in c's arguments with the undone effect's
// result view.
func (c Compensation) resolve(self any) (json.RawMessage, error) {
	if len(c.Args) == 0 {
		return json.RawMessage(`{}`), nil
	}
	return refs.Resolve(c.Args, selfRE, func(m []string) (any, error) {
		return refs.Path(m[0], "the undone effect's", self, m[1])
	})
}
