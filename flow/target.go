package flow

import (
	"net/url"
	"strings"
	"unicode"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/grants"
)

// The kinds of target.
const (
	KindHTTP           = "http"
	KindMCP            = "mcp"
	KindModel          = "model"
	KindSlackChannel   = "slack-channel"
	KindSlackWorkspace = "slack-workspace"
)

// Kinds lists the kinds of target, for help texts and errors.
var Kinds = []string{KindHTTP, KindMCP, KindModel, KindSlackChannel, KindSlackWorkspace}

// SlackWorkspace is the target of every call to the Slack workspace.
const SlackWorkspace = KindSlackWorkspace

// HTTP is the target of an HTTP call to u: its origin.
func HTTP(u *url.URL) string { return KindHTTP + ":" + grants.Origin(u) }

// MCP is the target of a call to the MCP server named server.
func MCP(server string) string { return KindMCP + ":" + server }

// Model is the target of a call to the model endpoint on host.
func Model(host string) string { return KindModel + ":" + strings.ToLower(host) }

// SlackChannel is the target of a post or update to channel.
func SlackChannel(channel string) string { return KindSlackChannel + ":" + channel }

// ParseTarget checks a target and returns it normalised (an HTTP origin
// with its scheme and host in lower case and its port written out), with
// its kind. "<kind>:*" is the kind's default. Errors name the field
// "target".
func ParseTarget(s string) (target, kind string, err error) {
	s = strings.TrimSpace(s)
	if s == KindSlackWorkspace {
		return s, KindSlackWorkspace, nil
	}
	kind, name, ok := strings.Cut(s, ":")
	if !ok || name == "" {
		return "", "", agentledger.Invalid("target", "%q must be KIND:NAME (KIND one of %s) or %s",
			s, strings.Join(Kinds, ", "), KindSlackWorkspace)
	}
	if name == "*" && kind != KindSlackWorkspace {
		if !known(kind) {
			return "", "", unknownKind(s, kind)
		}
		return kind + ":*", kind, nil
	}
	switch kind {
	case KindHTTP:
		u, err := grants.ParseHost(name)
		if err != nil {
			return "", "", agentledger.Invalid("target", "%q: the origin must be scheme://host[:port], as in http:https://%s", s, strings.TrimPrefix(strings.TrimPrefix(name, "https://"), "http://"))
		}
		return HTTP(u), kind, nil
	case KindMCP, KindModel, KindSlackChannel:
		if len(name) > 200 || strings.ContainsFunc(name, unicode.IsSpace) || strings.Contains(name, "/") {
			return "", "", agentledger.Invalid("target", "%q: the name must be 1-200 characters without spaces or '/'", s)
		}
		if kind == KindModel {
			name = strings.ToLower(name)
		}
		return kind + ":" + name, kind, nil
	case KindSlackWorkspace:
		return "", "", agentledger.Invalid("target", "%q: %s takes no name", s, KindSlackWorkspace)
	}
	return "", "", unknownKind(s, kind)
}

// KindDefault is the target whose limit applies to every target of kind
// without its own: "slack-channel:*".
func KindDefault(kind string) string { return kind + ":*" }

func known(kind string) bool {
	for _, k := range Kinds {
		if k == kind {
			return true
		}
	}
	return false
}

func unknownKind(s, kind string) error {
	return agentledger.Invalid("target", "%q: unknown kind %q (one of %s)", s, kind, strings.Join(Kinds, ", "))
}
