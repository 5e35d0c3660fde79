package registry

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The capabilities a worker pool announces beyond its kinds, and that a
// task needs (claims.EnqueueParams.Needs): a pool claims a task only when
// it has every one the task needs. Each is a plain string, so that the
// claim's test is one array containment in PostgreSQL.
//
//   - "tool:NAME": a tool its steps and agent tasks may call (built-in,
//     defined in Go, or an MCP server's, "tool:shop/list_orders");
//   - "mcp:SERVER": an MCP server it is configured with and connected to
//     (a task names an MCP tool by its server: the tools a server offers
//     are known only once it answers);
//   - "TOOL@ORIGIN": an origin an HTTP tool may reach
//     ("http_request@https://api.example.com:443"), as its allow-list reads;
//   - "model": it has a model endpoint for agent tasks;
//   - "agent:2": its agent loop answers the model in the second wording
//     (package agent). An agent task submitted since needs it, so that a
//     daemon of an older release, which would word a tool's result the
//     first way and so send a conversation other than the one recorded,
//     never takes one up; a task submitted before keeps the first.
const (
	CapModel  = "model"
	CapAgent2 = "agent:2"
)

// agentMaxSteps prefixes the announcement of how many completions a
// pool's agent loop allows a task (its max_steps limit). No task needs it,
// so any pool may claim a task: the door reads it to refuse one asking for
// more than a live pool allows (AgentMaxSteps).
const agentMaxSteps = "agent:max-steps="

// CapAgentMaxSteps announces that a pool's agent tasks may take up to n
// completions.
func CapAgentMaxSteps(n int) string { return agentMaxSteps + strconv.Itoa(n) }

// AgentMaxSteps is the max_steps limit caps announce; false when they
// announce none (a pool without a model endpoint, or of an older version).
func AgentMaxSteps(caps []string) (int, bool) {
	for _, c := range caps {
		if v, ok := strings.CutPrefix(c, agentMaxSteps); ok {
			n, err := strconv.Atoi(v)
			return n, err == nil
		}
	}
	return 0, false
}

// CapTool is the capability of calling tool name; an MCP tool
// ("server/tool") needs its server instead (CapMCP).
func CapTool(name string) string {
	if server, _, ok := strings.Cut(name, "/"); ok {
		return CapMCP(server)
	}
	return "tool:" + name
}

// CapMCP is the capability of having MCP server name.
func CapMCP(server string) string { return "mcp:" + server }

// CapOrigin is the capability of calling origin (scheme://host:port) with
// the HTTP tool tool.
func CapOrigin(tool, origin string) string { return tool + "@" + origin }

// Describe says what capability c is in an operator's words: "tool
// open_ticket", "MCP server shop", "http_request to http://127.0.0.1:7450",
// "a model endpoint".
func Describe(c string) string {
	switch {
	case c == CapModel:
		return "a model endpoint"
	case c == CapAgent2:
		return "agent loop 2 (a newer agentd)"
	case strings.HasPrefix(c, "tool:"):
		return "tool " + strings.TrimPrefix(c, "tool:")
	case strings.HasPrefix(c, "mcp:"):
		return "MCP server " + strings.TrimPrefix(c, "mcp:")
	}
	if tool, origin, ok := strings.Cut(c, "@"); ok {
		return fmt.Sprintf("%s to %s", tool, origin)
	}
	return c
}

// Missing returns those of needs that caps lacks, in needs' order. The
// agent loop's version (CapAgent2) goes with a model endpoint: a pool
// lacking the endpoint is said to lack that alone, not to be an older
// agentd.
func Missing(needs, caps []string) []string {
	var out []string
	noModel := slices.Contains(needs, CapModel) && !slices.Contains(caps, CapModel)
	for _, n := range needs {
		if !slices.Contains(caps, n) && !(noModel && n == CapAgent2) {
			out = append(out, n)
		}
	}
	return out
}

// WaitingFor says why a task that needs needs waits when none of servers
// (the live pools that claim its kind on its queue) can run it: what the
// one that comes closest lacks ("waiting for a daemon with tool
// open_ticket"), and "" when one can.
func WaitingFor(needs []string, servers []Worker) string {
	if len(needs) == 0 {
		return ""
	}
	best := needs
	for _, w := range servers {
		if w.Caps == nil { // an older version: claims any task
			return ""
		}
		m := Missing(needs, w.Caps)
		if len(m) == 0 {
			return ""
		}
		if len(m) < len(best) {
			best = m
		}
	}
	words := make([]string, len(best))
	for i, c := range best {
		words[i] = Describe(c) + notConnected(c, servers)
	}
	return "waiting for a daemon with " + joinAnd(words)
}

// notConnected says, for an MCP server's capability c, that a live pool
// has the server configured but not connected, and how it stands (a
// command that does not start, a URL that does not answer): no other
// daemon need be started, that one's server fixed. "" otherwise.
func notConnected(c string, servers []Worker) string {
	server, ok := strings.CutPrefix(c, "mcp:")
	if !ok {
		return ""
	}
	for _, w := range servers {
		if state, ok := w.MCPServers[server]; ok && state != "connected" {
			return fmt.Sprintf(" (configured on %s but %s)", w.ID, state)
		}
	}
	return ""
}

// joinAnd writes words as "a", "a and b", "a, b and c".
func joinAnd(words []string) string {
	if len(words) <= 1 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}
