package tools

// BuiltinConfig configures the built-in tools.
type BuiltinConfig struct {
	// HTTP configures http_request and unsafe_http.
	HTTP HTTPConfig
	// Door admits the children create_task queues (package admit's).
	Door ChildDoor
}

// Builtins returns the built-in tools: http_request, unsafe_http and
// create_task (the notify tool is notify.NewTool). The error reports a bad HTTP configuration (an
// allowed host or host header that cannot be parsed). Use them as
// NewRegistry(tools...).
func Builtins(cfg BuiltinConfig) ([]Tool, error) {
	req, err := NewHTTPRequest(cfg.HTTP)
	if err != nil {
		return nil, err
	}
	unsafe, err := NewUnsafeHTTP(cfg.HTTP)
	if err != nil {
		return nil, err
	}
	return []Tool{req, unsafe, NewCreateTask(cfg.Door)}, nil
}

// Everywhere names the tools every daemon has: the built-ins and notify,
// which package daemon always registers. A task's need of one of them is
// no need a claim must match, so the door leaves it out of the task's
// needs (a smaller row); the origins an HTTP tool calls stay needs.
var Everywhere = []string{"create_task", "http_request", "notify", "unsafe_http"}

// The built-in tools are Tools.
var (
	_ Tool = (*HTTPTool)(nil)
	_ Tool = (*CreateTask)(nil)
)
