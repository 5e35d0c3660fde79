package admit

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/agent"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/registry"
	"github.com/agentledger/agentledger/steps"
	"github.com/agentledger/agentledger/tools"
)

// needsOf is what task p needs of the pool that runs it beyond its kind,
// as its payload names it literally (registry's capability names): a
// steps task's tools, and the origins of its HTTP calls' literal URLs; an
// agent task's model endpoint and the tools it lists — but not the tools
// every daemon has (tools.Everywhere). What only the run
// knows (a URL made of an earlier result, the tools a model picks) is not
// a need: the run checks it, as it checks every call. A Go kind needs its
// kind, which the claim matches already.
func needsOf(p claims.EnqueueParams) []string {
	var out []string
	switch p.Kind {
	case steps.Kind:
		for _, n := range steps.Needs(p.Payload) {
			if n.Tool == "" {
				continue
			}
			if !slices.Contains(tools.Everywhere, n.Tool) {
				out = append(out, registry.CapTool(n.Tool))
			}
			if n.URL != nil {
				out = append(out, registry.CapOrigin(n.Tool, grants.Origin(n.URL)))
			}
		}
	case agent.Kind:
		out = append(out, registry.CapModel, registry.CapAgent2)
		for _, n := range agent.Needs(p.Payload, "") {
			if n.Tool != "" && !slices.Contains(tools.Everywhere, n.Tool) {
				out = append(out, registry.CapTool(n.Tool))
			}
		}
	}
	return sortedSet(out)
}

// runnable refuses a task needing needs that none of servers (the live
// pools that claim its kind on its queue) can run, naming what each
// lacks, and each by its id unless anonymous (a tenant's submission: the
// fleet's hosts and pids are the operator's). A pool that announced no
// capabilities (an older version) claims anything, and so can.
func runnable(needs []string, servers []registry.Worker, anonymous bool) error {
	return runnableAs("this task", needs, servers, anonymous)
}

// runnableAs is runnable, the task called what in the refusal.
func runnableAs(what string, needs []string, servers []registry.Worker, anonymous bool) error {
	if len(needs) == 0 {
		return nil
	}
	lacks := make([]string, 0, len(servers))
	for _, w := range servers {
		if w.Caps == nil {
			return nil
		}
		missing := registry.Missing(needs, w.Caps)
		if len(missing) == 0 {
			return nil
		}
		words := make([]string, len(missing))
		for i, c := range missing {
			words[i] = registry.Describe(c)
		}
		who := w.ID
		if anonymous {
			who = "a worker"
		}
		lacks = append(lacks, fmt.Sprintf("%s lacks %s", who, strings.Join(words, ", ")))
	}
	slices.Sort(lacks)
	lacks = slices.Compact(lacks)
	return agentledger.Invalid("payload", "no live worker can run %s: %s", what, strings.Join(lacks, "; "))
}
