package grants

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/agentledger/agentledger"
)

// Grant is what one tenant's tasks may reach. The zero Grant allows
// nothing; Default is what a tenant without a stored grant has.
type Grant struct {
	// All allows everything: the operator's grant.
	All bool `json:"all,omitempty" toml:"all"`
	// AllKinds lets the tenant submit every kind. It is never implied by
	// Kinds being empty: revoking the last kind named leaves none. (The
	// config file writes it kinds = ["all"]: see KindsFromConfig.)
	AllKinds bool `json:"all_kinds,omitempty" toml:"-"`
	// Kinds the tenant may submit, by name (with AllKinds, every kind).
	Kinds []string `json:"kinds" toml:"kinds"`
	// Tools its tasks may call by name: "http_request", "shop/charge", or
	// "shop/*" for every tool of an MCP server.
	Tools []string `json:"tools,omitempty" toml:"tools"`
	// Hosts the HTTP tools may reach, with whether the operator's secret
	// headers for that host go along.
	Hosts []Host `json:"hosts,omitempty" toml:"hosts"`
	// Channels the notify tool may post to.
	Channels []string `json:"channels,omitempty" toml:"channels"`
	// Models an agent task may call, by name; "*" allows the daemon's
	// configured model (AGENTLEDGER_LLM_MODEL) and no other, so a payload
	// naming another model needs that model granted by name. None allows
	// no model call.
	Models []string `json:"models,omitempty" toml:"models"`
	// PriorityFloor is the most urgent priority the tenant's tasks get,
	// submitted through the API or created by its tasks (create_task)
	// (0..100, lower runs first): one asking for less is raised to it. 0
	// leaves priorities as asked.
	PriorityFloor int16 `json:"priority_floor,omitempty" toml:"priority_floor"`
	// MaxTokens bounds the tokens one agent task may spend; 0 is no bound.
	MaxTokens int64 `json:"max_tokens,omitempty" toml:"max_tokens"`
	// Decide lets the tenant's API tokens approve or deny the approval
	// requests of its own tasks (POST /v1/approvals/{id}/approve, /deny):
	// a tenant whose tasks ask a person should not answer itself unless
	// the operator says so.
	Decide bool `json:"decide,omitempty" toml:"decide"`
	// Approve makes the tenant's calls of the tools, to the hosts and posts
	// to the channels it names wait for a person's approval (package
	// approvals), whatever the tenant's payloads declare: the operator's
	// word over a tenant's risky calls.
	Approve *Approve `json:"approve,omitempty" toml:"approve"`
}

// Approve names the calls of a tenant that need a person's approval.
type Approve struct {
	// Tools by name, "shop/*" for every tool of an MCP server.
	Tools []string `json:"tools,omitempty" toml:"tools"`
	// Hosts the HTTP tools call, as origins: "https://pay.example.com".
	Hosts []string `json:"hosts,omitempty" toml:"hosts"`
	// Channels notify posts to.
	Channels []string `json:"channels,omitempty" toml:"channels"`
}

// NeedsApproval reports whether the call n of the tenant whose grant is g
// needs a person's approval by g (Approve).
func (g *Grant) NeedsApproval(n Need) bool {
	if g == nil || g.Approve == nil {
		return false
	}
	a := g.Approve
	if n.Tool != "" && (&Grant{Tools: a.Tools}).allowsTool(n.Tool) {
		return true
	}
	if n.URL != nil {
		want := Origin(n.URL)
		for _, h := range a.Hosts {
			if hu, err := ParseHost(h); err == nil && Origin(hu) == want {
				return true
			}
		}
	}
	return n.Channel != "" && namesChannel(a.Channels, n.Channel)
}

// namesChannel reports whether channels names channel: a Slack channel
// name with or without its "#" is the same channel (the sink posts to
// both alike), so a grant or an approval written "ops" holds for a step's
// "#ops", and the other way round.
func namesChannel(channels []string, channel string) bool {
	want := strings.TrimPrefix(channel, "#")
	return slices.ContainsFunc(channels, func(c string) bool { return strings.TrimPrefix(c, "#") == want })
}

// Host is one target of the HTTP tools: "https://api.example.com" (port
// 443 implied), "http://127.0.0.1:8080".
type Host struct {
	URL           string `json:"url" toml:"url"`
	SecretHeaders bool   `json:"secret_headers,omitempty" toml:"secret_headers"`
}

// Need is what one call reaches, as a grant sees it. Zero fields need
// nothing.
type Need struct {
	Tool    string   // the tool called
	URL     *url.URL // the HTTP target
	Channel string   // the Slack channel
	Kind    string   // the kind of a task created
	Model   string   // the model asked
	Tokens  int64    // tokens the task spent so far, for a model call
	// DefaultModel is the daemon's configured model, the only one a
	// grant's "*" allows; empty: "*" allows none.
	DefaultModel string
}

// DeniedError is a call outside the tenant's grant. Allow returns it
// wrapped as agentledger.Permanent: retrying cannot widen the grant.
type DeniedError struct {
	Tenant  string
	Missing string // what the grant lacks: `tool "unsafe_http"`, `host https://x:443`
	// Flag is the agentctl tenant grant flag that grants it, its value
	// quoted for a shell where needed (ShellQuote): "--tool unsafe_http",
	// "--model '*'".
	Flag string
}

func (e *DeniedError) Error() string {
	if e.Flag == "" {
		return fmt.Sprintf("tenant %q has no grant for %s", e.Tenant, e.Missing)
	}
	return fmt.Sprintf("tenant %q has no grant for %s (agentctl tenant grant %s %s)", e.Tenant, e.Missing, ShellQuote(e.Tenant), e.Flag)
}

// ShellQuote returns s as one word of a POSIX shell: as it is when it holds
// only characters no shell treats specially, else in single quotes ("*"
// becomes '*', "small " becomes 'small '; a quote inside is closed,
// escaped and opened again).
func ShellQuote(s string) string {
	if s != "" && strings.Trim(s, shellPlain) == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// shellPlain are the characters a shell word may hold unquoted.
const shellPlain = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./_-"

// Unwrap makes a denial an ErrForbidden (the API's 403).
func (e *DeniedError) Unwrap() error { return agentledger.ErrForbidden }

// Allow returns nil when g allows everything n needs, else a permanent
// *DeniedError naming the first thing missing.
func (g *Grant) Allow(tenant string, n Need) error {
	if g.All {
		return nil
	}
	deny := func(flag, format string, a ...any) error {
		return agentledger.Permanent(&DeniedError{Tenant: tenant, Missing: fmt.Sprintf(format, a...), Flag: flag})
	}
	if n.Tool != "" && !g.allowsTool(n.Tool) {
		return deny("--tool "+ShellQuote(n.Tool), "tool %q", n.Tool)
	}
	if n.URL != nil {
		if _, ok := g.host(n.URL); !ok {
			return deny("--host "+ShellQuote(Origin(n.URL)), "host %s", Origin(n.URL))
		}
	}
	if n.Channel != "" && !namesChannel(g.Channels, n.Channel) {
		return deny("--channel "+ShellQuote(n.Channel), "channel %q", n.Channel)
	}
	if n.Kind != "" && !g.AllowsKind(n.Kind) {
		return deny("--kind "+ShellQuote(n.Kind), "kind %q", n.Kind)
	}
	if n.Model != "" {
		byName := n.Model != "*" && slices.Contains(g.Models, n.Model)
		configured := n.Model == n.DefaultModel && slices.Contains(g.Models, "*")
		if !byName && !configured && slices.Contains(g.Models, "*") && n.DefaultModel != "" {
			return deny("--model "+ShellQuote(n.Model), "model %q (\"*\" grants only the configured model, %q)", n.Model, n.DefaultModel)
		}
		if !byName && !configured {
			return deny("--model "+ShellQuote(n.Model), "model %q", n.Model)
		}
		if g.MaxTokens > 0 && n.Tokens >= g.MaxTokens {
			return deny("--max-tokens N", "more than %d tokens per task (this task spent %d)", g.MaxTokens, n.Tokens)
		}
	}
	return nil
}

// AllowsKind reports whether the tenant may submit tasks of kind: every
// kind only when written so (All or AllKinds), else the kinds named.
func (g *Grant) AllowsKind(kind string) bool {
	return g.All || g.AllKinds || slices.Contains(g.Kinds, kind)
}

// SecretHeaders reports whether the operator's secret headers for u's host
// may go with a request of this tenant to u.
func (g *Grant) SecretHeaders(u *url.URL) bool {
	if g.All {
		return true
	}
	h, ok := g.host(u)
	return ok && h.SecretHeaders
}

func (g *Grant) allowsTool(name string) bool {
	for _, t := range g.Tools {
		if t == name || strings.HasSuffix(t, "/*") && strings.HasPrefix(name, strings.TrimSuffix(t, "*")) {
			return true
		}
	}
	return false
}

func (g *Grant) host(u *url.URL) (Host, bool) {
	want := Origin(u)
	for _, h := range g.Hosts {
		if hu, err := ParseHost(h.URL); err == nil && Origin(hu) == want {
			return h, true
		}
	}
	return Host{}, false
}

// ParseHost parses a host entry: a URL with a scheme (http or https) and a
// host, and nothing after it but an optional "/".
func ParseHost(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return nil, agentledger.Invalid("host", "%q is not a URL", s)
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, agentledger.Invalid("host", "%q must start with https:// (or http:// to send in clear)", s)
	case u.Hostname() == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "":
		return nil, agentledger.Invalid("host", "%q must be scheme://host[:port] and nothing more", s)
	}
	return u, nil
}

// Origin is u's scheme, lower-case host and port, the port implied by the
// scheme written out: "https://api.example.com:443".
func Origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[strings.ToLower(u.Scheme)]
	}
	return strings.ToLower(u.Scheme) + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// AllowDecide returns nil when g lets the tenant decide its tasks'
// approval requests, else a *DeniedError naming --decide (403 in the API).
func (g *Grant) AllowDecide(tenant string) error {
	if g.All || g.Decide {
		return nil
	}
	return &DeniedError{Tenant: tenant, Missing: "deciding approval requests", Flag: "--decide"}
}

// Validate checks every entry, naming the first bad one.
func (g *Grant) Validate() error {
	for _, h := range g.Hosts {
		if _, err := ParseHost(h.URL); err != nil {
			return err
		}
	}
	for _, t := range g.Tools {
		if t == "" || strings.ContainsAny(t, " \t") || strings.Contains(strings.TrimSuffix(t, "/*"), "*") {
			return agentledger.Invalid("tool", "%q must be a tool name or server/*", t)
		}
	}
	for _, l := range [][]string{g.Kinds, g.Channels, g.Models} {
		for _, v := range l {
			if strings.TrimSpace(v) == "" {
				return agentledger.Invalid("grant", "an empty name")
			}
		}
	}
	if slices.Contains(g.Kinds, NoKinds) {
		return agentledger.Invalid("kinds", "%q is reserved: it stores no kind, and no kind has that name", NoKinds)
	}
	if slices.Contains(g.Kinds, AllKindsWord) {
		return agentledger.Invalid("kinds", "%q is not granted by name: every kind is all_kinds (agentctl tenant grant --all-kinds)", AllKindsWord)
	}
	if g.PriorityFloor < 0 || g.PriorityFloor > 100 {
		return agentledger.Invalid("priority_floor", "%d is outside 0..100", g.PriorityFloor)
	}
	if g.MaxTokens < 0 {
		return agentledger.Invalid("max_tokens", "must not be negative")
	}
	return nil
}
