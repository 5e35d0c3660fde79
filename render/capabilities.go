package render

import (
	"slices"
	"strings"

	"github.com/agentledger/agentledger/registry"
)

// Capabilities says what a worker pool can run beyond its kinds, most
// telling first (a model endpoint, MCP servers, the origins its HTTP tools
// may call, then its tools), so that a cut line keeps what sets daemons
// apart: "model endpoint · MCP shop · http_request → http://127.0.0.1:7450
// · tools echo, http_request". "" when it announced none (an older
// version, which claims any task).
func Capabilities(caps []string) string {
	if caps == nil {
		return ""
	}
	var model, agent2 bool
	var mcp, origins, tools []string
	for _, c := range caps {
		switch {
		case c == registry.CapModel:
			model = true
		case c == registry.CapAgent2:
			agent2 = true
		case strings.HasPrefix(c, "mcp:"):
			mcp = append(mcp, strings.TrimPrefix(c, "mcp:"))
		case strings.HasPrefix(c, "tool:"):
			tools = append(tools, strings.TrimPrefix(c, "tool:"))
		default:
			if tool, origin, ok := strings.Cut(c, "@"); ok {
				origins = append(origins, tool+" → "+origin)
			}
		}
	}
	for i, t := range tools {
		if slices.Contains(hostBound, t) && !slices.ContainsFunc(origins, func(o string) bool { return strings.HasPrefix(o, t+" → ") }) {
			tools[i] = t + " (no hosts allowed)"
		}
	}
	var parts []string
	switch {
	case model && agent2:
		parts = append(parts, "model endpoint")
	case model: // an older agentd's: it takes up only agent tasks submitted before agent:2
		parts = append(parts, "model endpoint (agent loop 1)")
	}
	if len(mcp) > 0 {
		parts = append(parts, "MCP "+strings.Join(mcp, ", "))
	}
	parts = append(parts, origins...)
	if len(tools) > 0 {
		parts = append(parts, "tools "+strings.Join(tools, ", "))
	}
	if len(parts) == 0 {
		return "nothing beyond its kinds"
	}
	return strings.Join(parts, " · ")
}

// hostBound are the built-in tools that call only the origins announced
// with them (tool@origin): with none announced their allow-list is empty,
// and a task needing one is never claimed here.
var hostBound = []string{"http_request", "unsafe_http"}

// Needs says what a task needs of the daemon that runs it: "tool
// open_ticket, http_request to http://127.0.0.1:7450". The agent loop's
// version goes unsaid: every daemon of this release has it, and a task
// waiting for one says so (registry.WaitingFor).
func Needs(needs []string) string {
	words := make([]string, 0, len(needs))
	for _, n := range needs {
		if n != registry.CapAgent2 {
			words = append(words, registry.Describe(n))
		}
	}
	return strings.Join(words, ", ")
}
