package render

import (
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
	var model bool
	var mcp, origins, tools []string
	for _, c := range caps {
		switch {
		case c == registry.CapModel:
			model = true
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
	var parts []string
	if model {
		parts = append(parts, "model endpoint")
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

// Needs says what a task needs of the daemon that runs it: "tool
// open_ticket, http_request to http://127.0.0.1:7450".
func Needs(needs []string) string {
	words := make([]string, len(needs))
	for i, n := range needs {
		words[i] = registry.Describe(n)
	}
	return strings.Join(words, ", ")
}
