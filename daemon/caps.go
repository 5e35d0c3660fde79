package daemon

import (
	"slices"
	"strings"
	"sync"

	"github.com/agentledger/agentledger/registry"
	"github.com/agentledger/agentledger/tools"
)

// capabilities returns what the daemon's pool can run beyond its kinds,
// read again at each call (worker.Config.Caps): every tool it has, the
// origins its HTTP tools may call, a model endpoint when one is
// configured, with the agent loop's version and its max_steps limit (all
// fixed once it runs, and read once), and each MCP server
// while it is connected (mcp gives their states). Sorted.
func capabilities(reg *tools.Registry, mcp func() map[string]string, model bool, maxSteps int) func() []string {
	fixed := sync.OnceValue(func() []string {
		var out []string
		if model {
			out = append(out, registry.CapModel, registry.CapAgent2, registry.CapAgentMaxSteps(maxSteps))
		}
		for _, name := range reg.Names() {
			if strings.Contains(name, "/") {
				continue // an MCP server's: that server, while connected
			}
			out = append(out, registry.CapTool(name))
			t, err := reg.Get(name)
			if r, ok := t.(tools.Bounded); ok && err == nil {
				for _, o := range r.Origins() {
					out = append(out, registry.CapOrigin(name, o))
				}
			}
		}
		slices.Sort(out)
		return out
	})
	// Read before every task that needs something (worker.lacks): without
	// a connected MCP server it is the fixed list itself, which no caller
	// changes.
	return func() []string {
		var out []string
		for server, state := range mcp() {
			if state == "connected" {
				out = append(out, registry.CapMCP(server))
			}
		}
		if out == nil {
			return fixed()
		}
		out = append(out, fixed()...)
		slices.Sort(out)
		return out
	}
}
