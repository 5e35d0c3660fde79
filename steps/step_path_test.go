package steps

import "testing"

// A step's path is tool/<i>; an agent's call (tool/<n>/<id>) and a Go
// kind's (call/…) are not steps.
func TestIsStepPath(t *testing.T) {
	for path, want := range map[string]bool{
		stepPath(0): true, stepPath(12): true, "tool/3/call-1": false, "call/refund": false,
		"tool/": false, "tool/x": false, "notify/ops": false,
	} {
		if got := IsStepPath(path); got != want {
			t.Errorf("IsStepPath(%q) = %v, want %v", path, got, want)
		}
	}
}
