package agent

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/tools"
)

// Need is what an agent task's payload names literally, and where.
type Need struct {
	// Field is where the payload names it: "model", "tools[2]",
	// "compensate.charge".
	Field string
	grants.Need
}

// Needs lists what payload names literally: the model its completions ask
// (its own, or model, the configured one of the daemon that checks, when
// it names none; "" when neither names one), each tool it lists, each
// tool that undoes one, and each channel its approval gates post to. What the model then calls with those tools — a
// host, a channel — only the run knows, and checks. A payload that does
// not decode needs nothing here: Work refuses it before any call. Check
// each need with Need.Check.
func Needs(payload json.RawMessage, model string) []Need {
	var p Payload
	if json.Unmarshal(payload, &p) != nil {
		return nil
	}
	out := []Need{{Field: "model", Need: grants.Need{Model: cmp.Or(p.Model, model), DefaultModel: model}}}
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
	names = names[:0]
	for name := range p.Approve {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if a, err := tools.ParseApproval(p.Approve[name]); err == nil && a != nil && a.Channel != "" {
			out = append(out, Need{Field: "approve." + name + ".channel", Need: grants.Need{Channel: a.Channel}})
		}
	}
	return out
}

// Check checks n, one of Needs, against g, tenant's grant, before the task
// runs, refusing only what is certain then: the model by ModelDenied (with
// the configured model Needs was given), any other need by g.Allow.
func (n Need) Check(g *grants.Grant, tenant string) error {
	if n.Field == "model" {
		return ModelDenied(g, tenant, n.Model, n.DefaultModel)
	}
	return g.Allow(tenant, n.Need)
}

// ModelDenied is the denial that the completions of an agent task whose
// payload names model named ("" for none) meet under g, tenant's grant,
// as far as it is certain before the task runs; nil when they may pass.
// Each completion is checked again on its worker, with the worker's
// configured model.
//
// configured is the configured model of the daemon that checks, taken to
// be its workers' too (one configuration for the fleet): g must allow
// named, or configured when named is "", as the run would. When it is ""
// the daemon has none and the workers' is not known, so only what no
// configured model could make pass is refused: g grants no model, or
// named is not granted by name and "*" (the configured model) is not
// granted either.
func ModelDenied(g *grants.Grant, tenant, named, configured string) error {
	switch {
	case configured != "":
		return g.Allow(tenant, grants.Need{Model: cmp.Or(named, configured), DefaultModel: configured})
	case g.All:
		return nil
	case len(g.Models) == 0:
		return agentledger.Permanent(&grants.DeniedError{Tenant: tenant, Missing: "model calls", Flag: "--model NAME"})
	case named != "" && !slices.Contains(g.Models, "*"):
		return g.Allow(tenant, grants.Need{Model: named})
	}
	return nil
}
