package grants

import (
	"fmt"
	"slices"
	"strings"
)

// Diff lists, one entry a part, where grant b differs from grant a:
// "tools: a [http_request notify], b [http_request]" with a and b named
// "config" and "in force" as a daemon logs them. Grants hold no secrets.
// Equal grants give none.
func Diff(a, b *Grant) []string {
	var out []string
	part := func(name, av, bv string) {
		if av != bv {
			out = append(out, fmt.Sprintf("%s: config %s, in force %s", name, av, bv))
		}
	}
	part("all", fmt.Sprint(a.All), fmt.Sprint(b.All))
	part("kinds", kindsText(a), kindsText(b))
	part("tools", setText(a.Tools), setText(b.Tools))
	part("hosts", setText(hostsText(a.Hosts)), setText(hostsText(b.Hosts)))
	part("channels", setText(a.Channels), setText(b.Channels))
	part("models", setText(a.Models), setText(b.Models))
	part("max_tokens", fmt.Sprint(a.MaxTokens), fmt.Sprint(b.MaxTokens))
	part("priority_floor", fmt.Sprint(a.PriorityFloor), fmt.Sprint(b.PriorityFloor))
	part("decide", fmt.Sprint(a.Decide), fmt.Sprint(b.Decide))
	return out
}

func kindsText(g *Grant) string {
	if g.AllKinds {
		return "every kind"
	}
	return setText(g.Kinds)
}

func hostsText(hs []Host) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.URL
		if u, err := ParseHost(h.URL); err == nil {
			out[i] = Origin(u)
		}
		if h.SecretHeaders {
			out[i] += "+secrets"
		}
	}
	return out
}

// setText writes a list in order, so that order alone is no difference.
func setText(l []string) string {
	s := slices.Sorted(slices.Values(l))
	return "[" + strings.Join(slices.Compact(s), " ") + "]"
}
