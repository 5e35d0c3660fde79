package flow

import (
	"errors"
	"net/url"
	"strconv"
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
// its kind. "<kind>:*" is the kind's default. An HTTP origin may be written
// as the HTTP tools' allow-list writes it: "http:https://host[:port]",
// "http:host[:port]" (https, as a bare allow-list entry), or the origin
// alone, "https://host[:port]" or "http://host[:port]". Errors name the
// field "target"; a suggestion in one is a target ParseTarget accepts.
func ParseTarget(s string) (target, kind string, err error) {
	s = strings.TrimSpace(s)
	if s == KindSlackWorkspace {
		return s, KindSlackWorkspace, nil
	}
	if strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://") {
		s = KindHTTP + ":" + s // an origin alone
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
		origin := name
		if !strings.Contains(origin, "://") {
			origin = "https://" + origin // as a bare allow-list entry
		}
		u, err := parseOrigin(origin)
		if err != nil {
			return "", "", agentledger.Invalid("target", "%q: the origin must be [http://|https://]host[:port]%s", s, suggestHTTP(origin))
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

// checkLimited refuses a target t (ParseTarget's) that no call would
// be paced on if a limit were set on it: a Slack channel named otherwise
// than by its ID, which is what the sink books its posts on. (The sink
// books a name only when Slack could not resolve it, and the post fails;
// so Take and Delete still take any name.)
func checkLimited(t, kind string) error {
	name := strings.TrimPrefix(t, kind+":")
	if kind == KindSlackChannel && name != "*" && !channelID(name) {
		return agentledger.Invalid("target", "%q: a Slack channel is named by its ID, like C0123ABCD (its details in "+
			"Slack show it), not by its name: the sink paces each channel by the ID it posts to", t)
	}
	return nil
}

// CheckPaced is the error Limit.Check gives a limit on target that would
// pace no call (a Slack channel named by its name), else nil (for a
// target that does not parse too: that is ParseTarget's to say). A start
// warns of such limits stored before Check refused them.
func CheckPaced(target string) error {
	t, kind, err := ParseTarget(target)
	if err != nil {
		return nil
	}
	return checkLimited(t, kind)
}

// channelID reports whether name is written as a Slack channel ID is:
// an upper-case letter, then upper-case letters and digits.
func channelID(name string) bool {
	for i, r := range name {
		if !(r >= 'A' && r <= 'Z') && !(i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return name != ""
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
	hint := ""
	if strings.ContainsAny(kind, ".[") || kind == "localhost" { // a host:port with no kind
		hint = suggestHTTP("https://" + s)
	}
	return agentledger.Invalid("target", "%q: unknown kind %q (one of %s)%s", s, kind, strings.Join(Kinds, ", "), hint)
}

// parseOrigin parses scheme://host[:port], the port 1..65535.
func parseOrigin(origin string) (*url.URL, error) {
	u, err := grants.ParseHost(origin)
	if err != nil {
		return nil, err
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, errors.New("bad port")
		}
	}
	return u, nil
}

// suggestHTTP is ", as in http:<origin>" for the origin that raw, an
// origin ParseTarget refused, probably means (its path, query or user
// dropped; a scheme other than http taken as https), or "" when there is
// none it would accept.
func suggestHTTP(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return ""
	}
	scheme := "https"
	if strings.EqualFold(u.Scheme, "http") {
		scheme = "http"
	}
	o, err := parseOrigin(scheme + "://" + u.Host)
	if err != nil {
		return ""
	}
	return ", as in " + HTTP(o)
}
