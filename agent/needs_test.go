package agent_test

import (
	"fmt"
	"testing"

	"github.com/agentledger/agentledger/agent"
)

// Needs lists the model a payload's completions ask — its own, else the
// configured one — each tool it lists, and each tool that undoes one.
func TestNeedsAreWhatThePayloadNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		payload, model string
		want           string
	}{
		{`{"prompt":"p","model":"big","tools":["notify","shop/charge"],"compensate":{"shop/charge":{"tool":"shop/refund"}}}`, "house",
			`[model:{model big default house} tools[0]:{tool notify} tools[1]:{tool shop/charge} compensate.shop/charge:{tool shop/refund}]`},
		{`{"prompt":"p"}`, "house", `[model:{model house default house}]`},
		{`{"prompt":"p"}`, "", `[]`}, // no model: the run refuses it
		{`{"prompt":"p","tools":"notify"}`, "house", `[]`},
	} {
		var got []string
		for _, n := range agent.Needs([]byte(tc.payload), tc.model) {
			switch {
			case n.Model != "":
				got = append(got, fmt.Sprintf("%s:{model %s default %s}", n.Field, n.Model, n.DefaultModel))
			default:
				got = append(got, fmt.Sprintf("%s:{tool %s}", n.Field, n.Tool))
			}
		}
		if s := fmt.Sprint(got); s != tc.want {
			t.Errorf("%s with %q: %s, want %s", tc.payload, tc.model, s, tc.want)
		}
	}
}
