package slack

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	slackgo "github.com/slack-go/slack"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/notify"
)

// Error is an error code answered by the Slack Web API. A permanent
// one comes wrapped in agentledger.Permanent.
type Error struct {
	// Method is the Web API method, e.g. "chat.postMessage".
	Method string
	// Code is Slack's error code, e.g. "channel_not_found".
	Code string
	// Channel is the channel the call addressed, if any.
	Channel string
	// Needed is the OAuth scope Slack said is missing, if any.
	Needed string
}

// slackCode is what the sink knows of one Slack error code.
type slackCode struct {
	explain   string
	permanent bool
	gone      bool // the message cannot be updated: ErrMessageGone
}

// slackCodes explains the codes the sink may meet. Codes not listed are
// transient: the ledger looks the message up before posting again.
var slackCodes = map[string]slackCode{
	"channel_not_found":       {explain: "the channel does not exist or the app cannot see it; check the channel name or ID and invite the app", permanent: true},
	"not_in_channel":          {explain: "the app is not a member of the channel; invite it with /invite", permanent: true},
	"is_archived":             {explain: "the channel is archived", permanent: true},
	"invalid_auth":            {explain: "Slack rejected the bot token; check the configured token", permanent: true},
	"not_authed":              {explain: "no bot token was sent", permanent: true},
	"account_inactive":        {explain: "the token belongs to a deactivated user or an uninstalled app", permanent: true},
	"token_revoked":           {explain: "the bot token was revoked; reinstall the app and configure its new token", permanent: true},
	"token_expired":           {explain: "the bot token expired; configure a fresh one", permanent: true},
	"no_permission":           {explain: "the token may not do this in the workspace", permanent: true},
	"missing_scope":           {explain: "the token lacks an OAuth scope this call needs", permanent: true},
	"not_allowed_token_type":  {explain: "this call needs a bot token (xoxb-)", permanent: true},
	"team_access_not_granted": {explain: "the token has no access to this workspace", permanent: true},
	"ekm_access_denied":       {explain: "workspace administrators have suspended posting", permanent: true},
	"restricted_action":       {explain: "the workspace does not let the app post in this channel", permanent: true},
	"msg_too_long":            {explain: "the message text is too long for Slack", permanent: true},
	"no_text":                 {explain: "the message has no text", permanent: true},
	"invalid_blocks":          {explain: "Slack rejected the message's Block Kit blocks", permanent: true},
	"invalid_blocks_format":   {explain: "Slack rejected the message's Block Kit blocks", permanent: true},
	"invalid_metadata_format": {explain: "Slack rejected the message metadata", permanent: true},
	"invalid_metadata_schema": {explain: "Slack rejected the message metadata", permanent: true},
	"invalid_arguments":       {explain: "Slack rejected the call's arguments", permanent: true},
	"message_not_found":       {explain: "the message to update no longer exists", permanent: true, gone: true},
	"cant_update_message":     {explain: "the app may not update this message", permanent: true, gone: true},
	"edit_window_closed":      {explain: "the message can no longer be edited", permanent: true, gone: true},
	"fatal_error":             {explain: "Slack failed while handling the call; it may or may not have taken effect"},
	"internal_error":          {explain: "Slack failed while handling the call; it may or may not have taken effect"},
	"service_unavailable":     {explain: "Slack is unavailable"},
	"request_timeout":         {explain: "Slack timed out; the call may or may not have taken effect"},
	"ratelimited":             {explain: "Slack is rate limiting the app"},
}

// Error reads "slack: <code>: <explanation> [<method> <channel>]".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("slack: " + e.Code + ": ")
	if c, ok := slackCodes[e.Code]; ok {
		b.WriteString(c.explain)
	} else {
		b.WriteString("Slack answered an error")
	}
	if e.Needed != "" {
		b.WriteString(" (needs scope " + e.Needed + ")")
	}
	b.WriteString(" [" + e.Method)
	if e.Channel != "" {
		b.WriteString(" " + e.Channel)
	}
	b.WriteString("]")
	return b.String()
}

// Permanent reports whether retrying the call cannot help.
func (e *Error) Permanent() bool { return slackCodes[e.Code].permanent }

// Is makes errors.Is(err, ErrMessageGone) true for the codes that mean
// the message cannot be updated (message_not_found, cant_update_message,
// edit_window_closed).
func (e *Error) Is(target error) bool {
	return target == notify.ErrMessageGone && slackCodes[e.Code].gone
}

// classify turns an error of slack-go into the sink's: a *Error for
// an error code (wrapped in agentledger.Permanent when retrying cannot
// help), and a plain, transient error otherwise. redact scrubs the token
// from whatever text came back.
func classify(method, channel string, err error, redact func(string) string) error {
	var resp slackgo.SlackErrorResponse
	var status slackgo.StatusCodeError
	switch {
	case errors.As(err, &resp):
		se := &Error{Method: method, Code: redact(resp.Err), Channel: channel, Needed: redact(resp.Needed)}
		if se.Permanent() {
			return agentledger.Permanent(se)
		}
		return se
	case isRateLimited(err):
		return &labelled{msg: fmt.Sprintf("slack: %s: rate limited by Slack", method), err: err}
	case errors.As(err, &status):
		return &labelled{msg: fmt.Sprintf("slack: %s: HTTP %d from Slack", method, status.Code), err: err}
	}
	err = fmt.Errorf("slack: %s: %w", method, err)
	if msg := err.Error(); redact(msg) != msg {
		return &labelled{msg: redact(msg), err: err}
	}
	return err
}

func isRateLimited(err error) bool {
	_, ok := rateLimited(err)
	return ok
}

// rateLimited reports whether err asks to wait and try again, and how long.
func rateLimited(err error) (time.Duration, bool) {
	var rl *slackgo.RateLimitedError
	var status slackgo.StatusCodeError
	var resp slackgo.SlackErrorResponse
	switch {
	case errors.As(err, &rl):
		return max(rl.RetryAfter, time.Second), true
	case errors.As(err, &status) && status.Code == http.StatusTooManyRequests,
		errors.As(err, &resp) && resp.Err == "ratelimited":
		return time.Second, true
	}
	return 0, false
}

// labelled is an error with its own text (the token scrubbed, or a
// clearer wording) that still unwraps to the original.
type labelled struct {
	msg string
	err error
}

func (e *labelled) Error() string { return e.msg }
func (e *labelled) Unwrap() error { return e.err }
