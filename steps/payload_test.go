package steps

import (
	"encoding/json"
	"strings"
	"testing"
)

// A reference written with a JSON escape is a reference (found by
// FuzzPayload): step 0 referring to itself as \u0024{steps.0.status}
// passed the parse and then indexed past the results when it ran.
func TestEscapedReferenceIsChecked(t *testing.T) {
	t.Parallel()
	_, err := parse(json.RawMessage(`{"steps":[{"tool":"a","args":{"x":"\u0024{steps.0.status}"}}]}`))
	if err == nil || !strings.Contains(err.Error(), "step 0: ${steps.0.status} refers to step 0, which does not run before it") {
		t.Fatalf("parse: %v", err)
	}
	p, err := parse(json.RawMessage(`{"steps":[{"tool":"a"},{"tool":"b","args":{"x":"\u0024{steps.0.status}"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if !references(p.Steps[1].Args) {
		t.Error("an escaped reference is not seen as one: Check would check its text as the argument")
	}
	args, err := resolve(p.Steps[1].Args, []any{map[string]any{"status": json.Number("201")}})
	if err != nil || string(args) != `{"x":201}` {
		t.Errorf("resolve: %s, %v", args, err)
	}
}
