package tools

import "github.com/agentledger/agentledger/notify"

// BuiltinConfig configures the built-in tools.
type BuiltinConfig struct {
	// HTTP configures http_request and unsafe_http.
	HTTP HTTPConfig
	// Sink receives notify posts; nil leaves the notify tool out.
	Sink notify.Sink
}

// Builtins returns the built-in tools: http_request, unsafe_http,
// create_task and, with a sink, notify. The error reports a bad HTTP
// configuration (an allowed host or host header that cannot be parsed).
// Use them as NewRegistry(tools...).
func Builtins(cfg BuiltinConfig) ([]Tool, error) {
	req, err := NewHTTPRequest(cfg.HTTP)
	if err != nil {
		return nil, err
	}
	unsafe, err := NewUnsafeHTTP(cfg.HTTP)
	if err != nil {
		return nil, err
	}
	out := []Tool{req, unsafe, NewCreateTask()}
	if cfg.Sink != nil {
		out = append(out, NewNotify(cfg.Sink))
	}
	return out, nil
}

// The built-in tools are Tools.
var (
	_ Tool = (*HTTPTool)(nil)
	_ Tool = (*CreateTask)(nil)
	_ Tool = (*Notify)(nil)
)
