package daemon

import (
	"slices"
	"testing"
)

// An MCP server's unsafe tools (registered as "server/tool") are named
// once, with their server, not again one by one.
func TestUnsafeToolsNameAnMCPServerOnce(t *testing.T) {
	got := unsafeTools(map[string]string{"shop/charge": "unsafe", "wire": "unsafe", "lookup": "pure"}, []string{"127.0.0.1:9"},
		[]MCPServer{{Name: "shop"}})
	want := []string{"unsafe_http", "wire", "the tools of MCP server shop without an idempotent or read-only hint"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}
