package agent_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/agent"
	"github.com/agentledger/agentledger/grants"
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
		{`{"prompt":"p"}`, "", `[model:{model  default }]`}, // the workers' model, not known here
		{`{"prompt":"p","tools":"notify"}`, "house", `[]`},
	} {
		var got []string
		for _, n := range agent.Needs([]byte(tc.payload), tc.model) {
			switch {
			case n.Field == "model":
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

// Before a task runs, a model is refused only when that is certain: with
// the checking daemon's configured model known (taken as the workers'),
// as the run checks it; with none known, only what no configured model
// could allow.
func TestModelDeniedOnlyWhenCertain(t *testing.T) {
	t.Parallel()
	star := &grants.Grant{Models: []string{"*"}}
	small := &grants.Grant{Models: []string{"small"}}
	both := &grants.Grant{Models: []string{"*", "small"}}
	for _, tc := range []struct {
		g                 *grants.Grant
		named, configured string
		want              string // "" passes
	}{
		// The configured model known.
		{star, "", "house", ""},
		{star, "house", "house", ""},
		{star, "big", "house", `model "big" ("*" grants only the configured model, "house")`},
		{small, "", "house", `model "house"`},
		{small, "small", "house", ""},
		{&grants.Grant{}, "", "house", `model "house"`},
		{&grants.Grant{All: true}, "big", "house", ""},
		// Not known: the workers' may be anything.
		{star, "", "", ""},
		{star, "workers-model", "", ""},
		{both, "big", "", ""},
		{small, "", "", ""},
		{small, "small", "", ""},
		{small, "big", "", `model "big"`},
		{&grants.Grant{}, "", "", `model calls`},
		{&grants.Grant{}, "small", "", `model calls`},
		{&grants.Grant{All: true}, "big", "", ""},
	} {
		err := agent.ModelDenied(tc.g, "acme", tc.named, tc.configured)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v, %q configured %q: %v, want it to pass", tc.g.Models, tc.named, tc.configured, err)
		case tc.want == "":
		case !errors.Is(err, agentledger.ErrForbidden) || !strings.Contains(err.Error(), `tenant "acme" has no grant for `+tc.want):
			t.Errorf("%v, %q configured %q: %v, want a denial of %s", tc.g.Models, tc.named, tc.configured, err, tc.want)
		}
	}
	// Need.Check checks the model need so, and any other by the grant.
	for _, n := range agent.Needs([]byte(`{"prompt":"p","model":"workers-model","tools":["unsafe_http"]}`), "") {
		err := n.Check(star, "acme")
		if n.Field == "model" && err != nil || n.Field != "model" && !errors.Is(err, agentledger.ErrForbidden) {
			t.Errorf("%s: %v", n.Field, err)
		}
	}
}
