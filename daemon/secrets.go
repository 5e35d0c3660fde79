package daemon

import (
	"fmt"
	"log/slog"

	"github.com/agentledger/agentledger/internal/secretfmt"
)

// The groups that hold a secret print and log it as set or not, whatever
// the verb, so that a Config printed whole (%v, %+v, %#v, slog) shows
// neither the model's API key nor the Slack token.

// String describes m with its API key hidden.
func (m Model) String() string {
	return fmt.Sprintf("Model{BaseURL:%q APIKey:%s Name:%q Timeout:%s MaxSteps:%d MaxAnswerTokens:%d}",
		secretfmt.URL(m.BaseURL), shown(m.APIKey), m.Name, m.Timeout, m.MaxSteps, m.MaxAnswerTokens)
}

// GoString is String for %#v.
func (m Model) GoString() string { return "daemon." + m.String() }

// Format prints String (GoString for %#v) whatever the verb.
func (m Model) Format(f fmt.State, verb rune) { secretfmt.Format(f, verb, m.String(), m.GoString()) }

// LogValue is m for slog, its API key hidden.
func (m Model) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("base_url", secretfmt.URL(m.BaseURL)),
		slog.String("api_key", shown(m.APIKey)),
		slog.String("name", m.Name),
		slog.Duration("timeout", m.Timeout),
		slog.Int("max_steps", m.MaxSteps),
		slog.Int("max_answer_tokens", m.MaxAnswerTokens),
	)
}

// String describes n with its Slack token hidden.
func (n Notifications) String() string {
	return fmt.Sprintf("Notifications{File:%q SlackToken:%s SlackTokenFile:%q SlackAPIURL:%q SlackInterval:%s SlackRate:%d "+
		"NoDispatch:%t DispatchConcurrency:%d DispatchLease:%s Approvals:%s}",
		n.File, shown(n.SlackToken), n.SlackTokenFile, n.SlackAPIURL, n.SlackInterval, n.SlackRate,
		n.NoDispatch, n.DispatchConcurrency, n.DispatchLease, n.Approvals.String())
}

// GoString is String for %#v.
func (n Notifications) GoString() string { return "daemon." + n.String() }

// Format prints String (GoString for %#v) whatever the verb.
func (n Notifications) Format(f fmt.State, verb rune) {
	secretfmt.Format(f, verb, n.String(), n.GoString())
}

// LogValue is n for slog, its Slack token hidden.
func (n Notifications) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("file", n.File),
		slog.String("slack_token", shown(n.SlackToken)),
		slog.String("slack_token_file", n.SlackTokenFile),
		slog.String("slack_api_url", n.SlackAPIURL),
		slog.Duration("slack_interval", n.SlackInterval),
		slog.Int("slack_rate", n.SlackRate),
		slog.Bool("no_dispatch", n.NoDispatch),
		slog.Int("dispatch_concurrency", n.DispatchConcurrency),
		slog.Duration("dispatch_lease", n.DispatchLease),
		slog.Any("approvals", n.Approvals),
	)
}

// shown is how a secret prints: whether it is set, never its value.
func shown(secret string) string {
	if secret == "" {
		return "(none)"
	}
	return "(set)"
}
