package admit

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/grants"
)

// A create_task call that names its child's kind and payload literally has
// the child's payload checked against the same grant, generation after
// generation up to maxChildDepth below the task, the refusal naming the
// path to it; a child made of a result is the run's to check.
func TestGrantedFollowsLiteralChildren(t *testing.T) {
	t.Parallel()
	g := &grants.Grant{Kinds: []string{"steps", "agent"}, Tools: []string{"http_request", "notify", "create_task"},
		Hosts: []grants.Host{{URL: "https://api.example.com"}}, Channels: []string{"ops"}, Models: []string{"*"}}
	check := func(kind, payload, model string) error {
		return granted(g, claims.EnqueueParams{Tenant: "acme", Kind: kind, Payload: []byte(payload)}, model)
	}
	child := func(kind, payload string) string {
		return `{"tool":"create_task","args":{"kind":"` + kind + `","payload":` + payload + `}}`
	}
	list := func(steps ...string) string { return `{"steps":[` + strings.Join(steps, ",") + `]}` }
	const unsafe = `{"tool":"unsafe_http","args":{"method":"GET","url":"https://api.example.com/"}}`
	const post = `{"tool":"http_request","args":{"method":"POST","url":"https://api.example.com/c"}`
	for _, tc := range []struct{ kind, payload, model, want string }{
		{"steps", list(`{"tool":"notify","args":{"channel":"ops","text":"x"}}`, child("steps", list(`{"tool":"notify"}`, unsafe))), "house",
			`payload: step 1's child: step 1: tenant "acme" has no grant for tool "unsafe_http"`},
		{"steps", list(child("steps", list(child("agent", `{"prompt":"p","tools":["notify","shop/charge"]}`)))), "house",
			`payload: step 0's child: step 0's child: tools[1]: tenant "acme" has no grant for tool "shop/charge"`},
		{"steps", list(child("agent", `{"prompt":"p","model":"big"}`)), "house",
			`payload: step 0's child: model: tenant "acme" has no grant for model "big"`},
		{"steps", list(post + `,"compensate":` + child("steps", list(`{"tool":"http_request","args":{"url":"https://evil.example/"}}`)) + `}`), "house",
			`payload: step 0's compensation's child: step 0: tenant "acme" has no grant for host https://evil.example:443`},
		{"steps", list(child("steps", list(child("echo", `{}`)))), "house",
			`payload: step 0's child: step 0: tenant "acme" has no grant for kind "echo"`},
		// A child's model, with no configured model known, as the task's.
		{"steps", list(child("agent", `{"prompt":"p","model":"workers-model"}`)), "", ``},
		// Made of a result, anywhere: known only when the parent runs.
		{"steps", list(post+`}`, child("steps", list(unsafe, `{"tool":"notify","args":{"text":"${steps.0.body.id}"}}`))), "house", ``},
		{"steps", list(post+`}`, `{"tool":"create_task","args":{"kind":"steps","payload":"${steps.0.body}"}}`), "house", ``},
		// Another kind's payload means nothing here.
		{"steps", list(child("echo", `{"steps":[`+unsafe+`]}`)), "house", `kind "echo"`},
	} {
		err := check(tc.kind, tc.payload, tc.model)
		var de *grants.DeniedError
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want it to pass", tc.payload, err)
		case tc.want == "":
		case !errors.As(err, &de) || !errors.Is(err, agentledger.ErrForbidden) || !strings.Contains(err.Error(), tc.want):
			t.Errorf("%s: %v, want a denial saying %q", tc.payload, err, tc.want)
		}
	}

	// A chain of children: checked down to maxChildDepth generations below.
	chain := func(generations int) string {
		p := list(unsafe)
		for range generations {
			p = list(child("steps", p))
		}
		return p
	}
	if err := check("steps", chain(maxChildDepth), "house"); err == nil ||
		!strings.HasPrefix(err.Error(), "payload: "+strings.Repeat("step 0's child: ", maxChildDepth)+`step 0: tenant "acme" has no grant for tool "unsafe_http"`) {
		t.Errorf("%d generations down: %v, want the denial naming the path", maxChildDepth, err)
	}
	if err := check("steps", chain(maxChildDepth+1), "house"); err != nil {
		t.Errorf("%d generations down: %v, want it left to the run", maxChildDepth+1, err)
	}
}

// An approval gate that names its channel posts there: the tenant's
// channels bound it as they bound notify, in a steps payload and an agent
// task's; a gate without one posts to the daemon's approvals channel.
func TestGrantedBoundsTheApprovalChannel(t *testing.T) {
	t.Parallel()
	g := &grants.Grant{Kinds: []string{"steps", "agent"}, Tools: []string{"http_request"},
		Hosts: []grants.Host{{URL: "https://api.example.com"}}, Channels: []string{"payments"}, Models: []string{"*"}}
	const call = `{"tool":"http_request","args":{"method":"POST","url":"https://api.example.com/c"},"approve":`
	for _, tc := range []struct{ kind, payload, want string }{
		{"steps", `{"steps":[` + call + `{"channel":"general","approvers":["U1"]}}]}`,
			`payload: step 0's approval: tenant "acme" has no grant for channel "general" (agentctl tenant grant acme --channel general)`},
		{"steps", `{"steps":[` + call + `{"channel":"payments"}}]}`, ``},
		{"steps", `{"steps":[` + call + `true}]}`, ``},
		{"agent", `{"prompt":"p","tools":["http_request"],"approve":{"http_request":{"channel":"general"}}}`,
			`payload: approve.http_request.channel: tenant "acme" has no grant for channel "general"`},
		{"agent", `{"prompt":"p","tools":["http_request"],"approve":{"http_request":{"channel":"payments"}}}`, ``},
	} {
		err := granted(g, claims.EnqueueParams{Tenant: "acme", Kind: tc.kind, Payload: []byte(tc.payload)}, "house")
		var de *grants.DeniedError
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want it to pass", tc.payload, err)
		case tc.want == "":
		case !errors.As(err, &de) || !strings.Contains(err.Error(), tc.want):
			t.Errorf("%s: %v, want a denial saying %q", tc.payload, err, tc.want)
		}
	}
}
