package grants_test

import (
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/grants"
)

func u(t *testing.T, raw string) *url.URL {
	t.Helper()
	v, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestAllow(t *testing.T) {
	g := &grants.Grant{Tools: []string{"http_request", "shop/*"}, Channels: []string{"ops"},
		Hosts:  []grants.Host{{URL: "https://api.example.com"}, {URL: "http://127.0.0.1:8080", SecretHeaders: true}},
		Models: []string{"small"}, MaxTokens: 1000, Kinds: []string{"steps"}}
	for _, tc := range []struct {
		need    grants.Need
		missing string // "" when allowed
	}{
		{grants.Need{Tool: "http_request", URL: u(t, "https://API.example.com/x")}, ""},
		{grants.Need{Tool: "http_request", URL: u(t, "https://api.example.com:443/x")}, ""},
		// Another scheme or port is another host.
		{grants.Need{Tool: "http_request", URL: u(t, "http://api.example.com/x")}, "host http://api.example.com:80"},
		{grants.Need{Tool: "http_request", URL: u(t, "https://api.example.com:8443/")}, "host https://api.example.com:8443"},
		{grants.Need{Tool: "unsafe_http"}, `tool "unsafe_http"`},
		{grants.Need{Tool: "shop/charge"}, ""},
		{grants.Need{Tool: "shopping/charge"}, `tool "shopping/charge"`},
		{grants.Need{Tool: "notify", Channel: "ops"}, `tool "notify"`},
		{grants.Need{Tool: "shop/x", Channel: "ceo"}, `channel "ceo"`},
		// A channel's name with or without its "#" is the same channel.
		{grants.Need{Tool: "shop/x", Channel: "#ops"}, ""},
		{grants.Need{Tool: "shop/x", Channel: "#ceo"}, `channel "#ceo"`},
		{grants.Need{Model: "small", Tokens: 999}, ""},
		{grants.Need{Model: "small", Tokens: 1000}, "more than 1000 tokens per task (this task spent 1000)"},
		{grants.Need{Model: "large"}, `model "large"`},
		{grants.Need{Kind: "steps"}, ""},
		{grants.Need{Kind: "agent"}, `kind "agent"`},
	} {
		err := g.Allow("acme", tc.need)
		switch {
		case tc.missing == "" && err != nil:
			t.Errorf("%+v: %v, want allowed", tc.need, err)
		case tc.missing != "" && (err == nil || !strings.Contains(err.Error(), "no grant for "+tc.missing)):
			t.Errorf("%+v: %v, want the missing %s named", tc.need, err, tc.missing)
		case err != nil:
			var perm *agentledger.PermanentError
			if !errors.Is(err, agentledger.ErrForbidden) || !errors.As(err, &perm) {
				t.Errorf("%v: want forbidden and permanent", err)
			}
		}
	}
	if !g.SecretHeaders(u(t, "http://127.0.0.1:8080/a")) || g.SecretHeaders(u(t, "https://api.example.com/")) {
		t.Error("secret headers go only where the grant says")
	}
}

func TestDefaults(t *testing.T) {
	op, api := grants.Default(agentledger.OperatorTenant), grants.Default("acme")
	if op.Allow(agentledger.OperatorTenant, grants.Need{Tool: "unsafe_http", Model: "any", Channel: "x"}) != nil {
		t.Error("the operator's tenant may reach everything by default")
	}
	if api.Allow("acme", grants.Need{Kind: "steps"}) != nil {
		t.Error("an API tenant may submit any kind by default")
	}
	for _, n := range []grants.Need{{Tool: "http_request"}, {Tool: "notify"}, {Model: "gpt"}} {
		if api.Allow("acme", n) == nil {
			t.Errorf("an API tenant reaches %+v by default", n)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, g := range []grants.Grant{
		{Hosts: []grants.Host{{URL: "api.example.com"}}},
		{Hosts: []grants.Host{{URL: "ftp://api.example.com"}}},
		{Hosts: []grants.Host{{URL: "https://api.example.com/path"}}},
		{Hosts: []grants.Host{{URL: "https://user@api.example.com"}}},
		{Tools: []string{"*"}},
		{Tools: []string{"a b"}},
		{Channels: []string{" "}},
		{MaxTokens: -1},
	} {
		if err := g.Validate(); !errors.Is(err, agentledger.ErrInvalid) {
			t.Errorf("%+v: %v, want invalid", g, err)
		}
	}
}

// A denial's suggestion can be pasted into a shell as printed: a value the
// shell would expand or split is quoted, any other left as it is.
func TestDeniedSuggestionIsShellQuoted(t *testing.T) {
	g := &grants.Grant{Models: []string{"*"}}
	for _, c := range []struct {
		need grants.Need
		flag string
	}{
		{grants.Need{Model: "*"}, "--model '*'"},
		{grants.Need{Model: "small ", DefaultModel: "small"}, "--model 'small '"},
		{grants.Need{Model: "it's"}, `--model 'it'\''s'`},
		{grants.Need{Model: "gpt-4o-mini"}, "--model gpt-4o-mini"},
		{grants.Need{Tool: "shop/charge"}, "--tool shop/charge"},
		{grants.Need{Tool: "shop/$(id)"}, "--tool 'shop/$(id)'"},
		{grants.Need{Channel: "#ops"}, "--channel '#ops'"},
		{grants.Need{Tool: "http_request", URL: u(t, "http://[::1]:8080/x")}, "--tool http_request"},
		{grants.Need{URL: u(t, "http://[::1]:8080/x")}, "--host 'http://[::1]:8080'"},
		{grants.Need{URL: u(t, "https://API.example.com/x")}, "--host https://api.example.com:443"},
		{grants.Need{Kind: "a:b.c_d-e"}, "--kind a:b.c_d-e"},
	} {
		err := (&grants.Grant{Models: g.Models}).Allow("acme", c.need)
		var d *grants.DeniedError
		if !errors.As(err, &d) || d.Flag != c.flag || !strings.HasSuffix(err.Error(), "(agentctl tenant grant acme "+c.flag+")") {
			t.Errorf("%+v: %v, want the suggestion %s", c.need, err, c.flag)
		}
	}
	for s, want := range map[string]string{"": "''", "a b": "'a b'", "~x": "'~x'", "a;b": "'a;b'", "x=1,y@z%": "x=1,y@z%"} {
		if got := grants.ShellQuote(s); got != want {
			t.Errorf("ShellQuote(%q) = %s, want %s", s, got, want)
		}
	}
}

// Deciding approval requests is granted apart from everything else: a
// tenant with tools and hosts may not decide until --decide, the
// operator's grant may; the flag survives the stored document and shows
// in a diff.
func TestAllowDecide(t *testing.T) {
	g := &grants.Grant{AllKinds: true, Tools: []string{"http_request"}}
	err := g.AllowDecide("acme")
	var denied *grants.DeniedError
	if !errors.Is(err, agentledger.ErrForbidden) || !errors.As(err, &denied) || denied.Flag != "--decide" ||
		!strings.Contains(err.Error(), "agentctl tenant grant acme --decide") {
		t.Fatalf("no decide: %v, want forbidden naming --decide", err)
	}
	if err := (&grants.Grant{All: true}).AllowDecide("default"); err != nil {
		t.Errorf("the operator's grant: %v", err)
	}
	g.Decide = true
	if err := g.AllowDecide("acme"); err != nil {
		t.Errorf("granted: %v", err)
	}
	b, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	var back grants.Grant
	if err := json.Unmarshal(b, &back); err != nil || !back.Decide {
		t.Fatalf("stored %s read back as %+v: %v", b, back, err)
	}
	if d := grants.Diff(&grants.Grant{AllKinds: true, Tools: g.Tools}, g); !slices.Equal(d, []string{"decide: config false, in force true"}) {
		t.Errorf("diff: %q", d)
	}
}

// A grant asks approval for the tools (an MCP server's by "server/*"),
// hosts (as origins) and channels it names, and for nothing else.
func TestNeedsApproval(t *testing.T) {
	g := &grants.Grant{All: true, Approve: &grants.Approve{Tools: []string{"refund", "shop/*"},
		Hosts: []string{"https://pay.example.com"}, Channels: []string{"payments"}}}
	u := func(s string) *url.URL { v, _ := url.Parse(s); return v }
	for _, c := range []struct {
		n    grants.Need
		asks bool
	}{
		{grants.Need{Tool: "refund"}, true},
		{grants.Need{Tool: "shop/charge"}, true},
		{grants.Need{Tool: "shopping"}, false},
		{grants.Need{Tool: "http_request", URL: u("https://pay.example.com:443/x")}, true},
		{grants.Need{Tool: "http_request", URL: u("http://pay.example.com/x")}, false},
		{grants.Need{Tool: "notify", Channel: "payments"}, true},
		{grants.Need{Tool: "notify", Channel: "ops"}, false},
		// "#payments" is the channel payments: a step cannot step round
		// the approval by writing the "#".
		{grants.Need{Tool: "notify", Channel: "#payments"}, true},
	} {
		if got := g.NeedsApproval(c.n); got != c.asks {
			t.Errorf("%+v: asks %v, want %v", c.n, got, c.asks)
		}
	}
	if (&grants.Grant{All: true}).NeedsApproval(grants.Need{Tool: "refund"}) || (*grants.Grant)(nil).NeedsApproval(grants.Need{Tool: "x"}) {
		t.Error("a grant without Approve asks")
	}
}
