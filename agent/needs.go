package agent

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/agentledger/agentledger/grants"
)

// Need is what an agent task's payload names literally, and where.
type Need struct {
	// Field is where the payload names it: "model", "tools[2]",
	// "compensate.charge".
	Field string
	grants.Need
}

// Needs lists what payload names literally: the model its completions ask
// (its own, or model, the daemon's configured one, when it names none),
// each tool it lists and each tool that undoes one. What the model then
// calls with those tools — a host, a channel — only the run knows, and
// checks. A payload that does not decode needs nothing here: Work refuses
// it before any call.
func Needs(payload json.RawMessage, model string) []Need {
	var p Payload
	if json.Unmarshal(payload, &p) != nil {
		return nil
	}
	var out []Need
	if m := cmp.Or(p.Model, model); m != "" {
		out = append(out, Need{Field: "model", Need: grants.Need{Model: m, DefaultModel: model}})
	}
	for i, name := range p.Tools {
		out = append(out, Need{Field: fmt.Sprintf("tools[%d]", i), Need: grants.Need{Tool: name}})
	}
	names := make([]string, 0, len(p.Compensate))
	for name := range p.Compensate {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if c := p.Compensate[name]; c.Tool != "" {
			out = append(out, Need{Field: "compensate." + name, Need: grants.Need{Tool: c.Tool}})
		}
	}
	return out
}
