package registry_test

import (
	"testing"

	"github.com/agentledger/agentledger/registry"
)

// A task waiting for an MCP server that a live daemon has configured but
// cannot reach says so: no other daemon need be started, that server
// fixed.
func TestWaitingForAServerNotConnected(t *testing.T) {
	servers := []registry.Worker{{ID: "d1", Caps: []string{registry.CapModel},
		MCPServers: map[string]string{"broken": "retrying in 4s: fork/exec /bin/nope: no such file or directory"}}}
	got := registry.WaitingFor([]string{registry.CapMCP("broken"), registry.CapModel}, servers)
	want := "waiting for a daemon with MCP server broken (configured on d1 but retrying in 4s: fork/exec /bin/nope: no such file or directory)"
	if got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	if got := registry.WaitingFor([]string{registry.CapMCP("shop")}, servers); got != "waiting for a daemon with MCP server shop" {
		t.Errorf("a server no daemon has: %q", got)
	}
}

// An agent task waiting where no live daemon has a model endpoint waits
// for the endpoint, not for a newer agentd; one beside a daemon that has
// the endpoint but an older agent loop waits for a newer agentd.
func TestAnAgentTaskWaitsForWhatIsMissing(t *testing.T) {
	needs := []string{registry.CapAgent2, registry.CapModel}
	if got := registry.WaitingFor(needs, []registry.Worker{{ID: "d1", Caps: []string{"tool:echo"}}}); got != "waiting for a daemon with a model endpoint" {
		t.Errorf("no model endpoint: %q", got)
	}
	if got := registry.WaitingFor(needs, []registry.Worker{{ID: "d1", Caps: []string{registry.CapModel}}}); got != "waiting for a daemon with agent loop 2 (a newer agentd)" {
		t.Errorf("an older agentd: %q", got)
	}
	if m := registry.Missing(needs, nil); len(m) != 1 || m[0] != registry.CapModel {
		t.Errorf("Missing with no capabilities: %q", m)
	}
}
