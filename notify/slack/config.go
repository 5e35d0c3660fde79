package slack

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/agentledger/agentledger/internal/secretfmt"
)

// Defaults of a Config.
const (
	// DefaultPerChannelInterval spaces posts and updates to one channel,
	// about Slack's one message a second per channel.
	DefaultPerChannelInterval = time.Second
	// DefaultWorkspaceRate is posts and updates a second over all channels.
	DefaultWorkspaceRate = 1.0
	// DefaultWorkspaceBurst is how many may go at once before the rate
	// applies.
	DefaultWorkspaceBurst = 3
	// DefaultMaxRetryAfter is the longest 429 Retry-After waited out inside
	// a call; a longer one is returned as agentledger.RetryAfter.
	DefaultMaxRetryAfter = 30 * time.Second
	// defaultTimeout bounds one HTTP call of the default client.
	defaultTimeout = 30 * time.Second
)

// redacted stands in for the token wherever a config or sink is printed.
const redacted = "[redacted]"

// Config configures a Sink. Printing it (fmt with any verb, slog)
// never shows the token.
type Config struct {
	// Token is the bot token (xoxb-…). It is a secret: it is sent to
	// Slack and nowhere else.
	Token string
	// TokenFile, instead of Token, names a file holding the token
	// (surrounding white space is ignored).
	TokenFile string
	// APIURL replaces Slack's Web API root ("https://slack.com/api/"), for
	// tests.
	APIURL string
	// HTTPClient makes the calls; nil means a client with a 30s timeout.
	HTTPClient *http.Client
	// PerChannelInterval is the least time between two posts or updates
	// to one channel: 0 means DefaultPerChannelInterval, negative no
	// pacing.
	PerChannelInterval time.Duration
	// WorkspaceRate is posts and updates a second over all channels: 0
	// means DefaultWorkspaceRate, negative no pacing.
	WorkspaceRate float64
	// WorkspaceBurst is how many posts may go at once before
	// WorkspaceRate applies: 0 means DefaultWorkspaceBurst.
	WorkspaceBurst int
	// MaxRetryAfter is the longest Retry-After waited out inside a call:
	// 0 means DefaultMaxRetryAfter.
	MaxRetryAfter time.Duration
	// Fleet, when set, paces posts and updates by limits the whole fleet
	// shares, on the targets "slack-channel:<channel ID>" and
	// "slack-workspace", after this process's own pacing; nil: this
	// process's pacing only.
	Fleet FleetPacer
	// Logger receives rate-limit waits and failures; nil logs nothing.
	Logger *slog.Logger
}

// token returns the configured token, read from TokenFile if need be.
// Errors name the file, never its content.
func (c Config) token() (string, error) {
	switch {
	case c.Token != "" && c.TokenFile != "":
		return "", errors.New("notify: slack: set Token or TokenFile, not both")
	case c.Token != "":
		if strings.ContainsFunc(c.Token, isSpace) {
			return "", errors.New("notify: slack: the token contains white space")
		}
		return c.Token, nil
	case c.TokenFile != "":
		b, err := os.ReadFile(c.TokenFile)
		if err != nil {
			var pe *os.PathError
			if errors.As(err, &pe) {
				err = pe.Err // the path is named below, once
			}
			return "", fmt.Errorf("notify: slack: reading the token file %s: %w", c.TokenFile, err)
		}
		tok := strings.TrimSpace(string(b))
		if tok == "" {
			return "", fmt.Errorf("notify: slack: the token file %s is empty", c.TokenFile)
		}
		if strings.ContainsFunc(tok, isSpace) {
			return "", fmt.Errorf("notify: slack: the token file %s holds more than one word", c.TokenFile)
		}
		return tok, nil
	}
	return "", errors.New("notify: slack: no bot token configured (Token or TokenFile)")
}

func isSpace(r rune) bool { return r <= ' ' || r == 0x7f }

// String describes the config with the token redacted.
func (c Config) String() string {
	return fmt.Sprintf("Config{Token:%q TokenFile:%q APIURL:%q PerChannelInterval:%s WorkspaceRate:%g WorkspaceBurst:%d MaxRetryAfter:%s}",
		c.shownToken(), c.TokenFile, c.APIURL, c.PerChannelInterval, c.WorkspaceRate, c.WorkspaceBurst, c.MaxRetryAfter)
}

// GoString is String for %#v.
func (c Config) GoString() string { return "notify." + c.String() }

// Format prints String (GoString for %#v) whatever the verb, so that no
// verb prints the token field.
func (c Config) Format(f fmt.State, verb rune) { secretfmt.Format(f, verb, c.String(), c.GoString()) }

// LogValue is the config for slog, token redacted.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("token", c.shownToken()),
		slog.String("token_file", c.TokenFile),
		slog.String("api_url", c.APIURL),
		slog.Duration("per_channel_interval", c.PerChannelInterval),
		slog.Float64("workspace_rate", c.WorkspaceRate),
		slog.Int("workspace_burst", c.WorkspaceBurst),
		slog.Duration("max_retry_after", c.MaxRetryAfter),
	)
}

// MarshalJSON encodes the config with the token redacted.
func (c Config) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Token              string        `json:"token,omitempty"`
		TokenFile          string        `json:"token_file,omitempty"`
		APIURL             string        `json:"api_url,omitempty"`
		PerChannelInterval time.Duration `json:"per_channel_interval,omitempty"`
		WorkspaceRate      float64       `json:"workspace_rate,omitempty"`
		WorkspaceBurst     int           `json:"workspace_burst,omitempty"`
		MaxRetryAfter      time.Duration `json:"max_retry_after,omitempty"`
	}{c.shownToken(), c.TokenFile, c.APIURL, c.PerChannelInterval, c.WorkspaceRate, c.WorkspaceBurst, c.MaxRetryAfter})
}

// shownToken is what printing shows of the token: nothing or "[redacted]".
func (c Config) shownToken() string {
	if c.Token == "" {
		return ""
	}
	return redacted
}
