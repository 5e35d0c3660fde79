package tools

import (
	"maps"
	"slices"
)

// Bounded is a tool that calls only the origins it lists, as the HTTP
// tools do their allow-lists ("https://api.example.com:443"): its daemon
// announces each as a capability, so that a task whose literal URL this
// daemon may not call goes to one that may.
type Bounded interface {
	Tool
	Origins() []string
}

// Origins are the origins t may call, sorted.
func (t *HTTPTool) Origins() []string { return slices.Sorted(maps.Keys(t.allowed)) }

var _ Bounded = (*HTTPTool)(nil)
