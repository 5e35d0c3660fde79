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
		{[]string{"http_request@https://api.example.com:443", "tool:create_task", "tool:http_request", "tool:unsafe_http"},
			"http_request → https://api.example.com:443 · tools create_task, http_request, unsafe_http (no hosts allowed)"},
	} {
		if got := Capabilities(c.caps); got != c.want {
			t.Errorf("Capabilities(%q) = %q, want %q", c.caps, got, c.want)
		}
	}
}
