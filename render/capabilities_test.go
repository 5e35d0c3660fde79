package render

import "testing"

func TestCapabilities(t *testing.T) {
	for _, c := range []struct {
		caps []string
		want string
	}{
		{nil, ""},
		{[]string{}, "nothing beyond its kinds"},
		{[]string{"agent:2", "http_request@http://127.0.0.1:7450", "mcp:shop", "model", "tool:echo", "tool:http_request"},
			"model endpoint · MCP shop · http_request → http://127.0.0.1:7450 · tools echo, http_request"},
		{[]string{"model"}, "model endpoint (agent loop 1)"},
	} {
		if got := Capabilities(c.caps); got != c.want {
			t.Errorf("Capabilities(%q) = %q, want %q", c.caps, got, c.want)
		}
	}
}
