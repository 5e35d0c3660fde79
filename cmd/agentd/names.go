package main

import (
	"log/slog"
	"regexp"
)

// settingRE matches how package daemon names a setting for both of its
// readers (daemon's setting): the embedding program's field, then
// agentd's flag or variable — `Worker.Heartbeat (agentd --heartbeat)`,
// `Notify.SlackToken (agentd's AGENTLEDGER_SLACK_TOKEN)`,
// `Policy.ToolApprovals["refund"] (agentd --approve-tools)`.
var settingRE = regexp.MustCompile(`\b[A-Z][A-Za-z]*(?:\.[A-Z][A-Za-z]*)+(\[[^\]]*\])? \(agentd(?:'s)? ([^)]+)\)`)

// agentdNames words s for agentd's reader, who sets flags and variables,
// not the fields of a Go program: "--heartbeat: 2s must be …".
func agentdNames(s string) string {
	return settingRE.ReplaceAllStringFunc(s, func(m string) string {
		sub := settingRE.FindStringSubmatch(m)
		if sub[1] != "" {
			return sub[2] + " " + sub[1]
		}
		return sub[2]
	})
}

// namedForAgentd is a slog ReplaceAttr that words the message and every
// string or error attribute with agentdNames.
func namedForAgentd(a slog.Attr) slog.Attr {
	switch v := a.Value; {
	case v.Kind() == slog.KindString:
		a.Value = slog.StringValue(agentdNames(v.String()))
	case v.Kind() == slog.KindAny:
		if err, ok := v.Any().(error); ok {
			a.Value = slog.StringValue(agentdNames(err.Error()))
		}
	}
	return a
}
