package daemon

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger/approvals"
	"github.com/agentledger/agentledger/approvals/slackui"
	"github.com/agentledger/agentledger/httpapi"
	"github.com/agentledger/agentledger/internal/secretfmt"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/metrics"
	"github.com/agentledger/agentledger/notify"
	"github.com/agentledger/agentledger/notify/outbox"
	"github.com/agentledger/agentledger/notify/slack"
)

// Approvals is where approval requests are asked in Slack. The zero
// Approvals posts none and serves no interactivity endpoint.
type Approvals struct {
	// Channel is where a request is posted with Approve and Deny
	// buttons (the console sink prints it without a Slack token); empty
	// posts none.
	Channel string
	// SigningSecret is the Slack app's (a secret); SigningSecretFile
	// holds one (give one or the other). Set, the API serves Slack's
	// clicks at POST /slack/interactivity.
	SigningSecret     string
	SigningSecretFile string
	// FollowInterval is how often requests decided elsewhere (the
	// console, agentctl, the API, a timeout, a cancel) are looked for,
	// to edit their posts (default 2s).
	FollowInterval time.Duration
}

// defaultFollowInterval spaces the looks for requests decided elsewhere.
const defaultFollowInterval = 2 * time.Second

// approvalsRequested is the gate's hook that posts a pending request once
// to its gate's channel, or else the approvals channel; a request with
// neither is asked nowhere but agentctl, the console and the API.
func approvalsRequested(cfg *Config, db *pgxpool.Pool) func(context.Context, approvals.Request, bool) error {
	return func(ctx context.Context, r approvals.Request, _ bool) error {
		channel := cmp.Or(r.Channel, cfg.Notify.Approvals.Channel)
		if channel == "" {
			return nil
		}
		return slackui.Tell(ctx, db, r, channel)
	}
}

// approvalsPerformed is the gate's hook that edits a posted request's
// message once more to say what the approved effect did (nothing for a
// request that was never posted).
func approvalsPerformed(db *pgxpool.Pool) func(context.Context, approvals.Request, ledger.Result, error) error {
	return func(ctx context.Context, r approvals.Request, res ledger.Result, err error) error {
		return slackui.TellOutcome(ctx, db, r, slackui.Outcome(res, err, time.Now()))
	}
}

// approvalsDeliverer delivers the requests' posts and edits before next
// delivers the other events.
func approvalsDeliverer(db *pgxpool.Pool, l *ledger.Ledger, sink notify.Sink, next outbox.Handler) outbox.Handler {
	return &slackui.Deliverer{Store: approvals.NewStore(db), Ledger: l, Sink: sink, Next: next}
}

// approvalsFollow edits the posts of requests decided elsewhere (a gate
// may name its own channel, so it runs with or without an approvals
// channel: a look finds nothing where nothing was posted). Every daemon
// runs it; they take turns.
func approvalsFollow(cfg *Config, db *pgxpool.Pool, log *slog.Logger) func(context.Context) error {
	every := cfg.Notify.Approvals.FollowInterval
	if every <= 0 {
		every = defaultFollowInterval
	}
	return func(ctx context.Context) error {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
			}
			if n, err := slackui.Follow(ctx, db, slackui.FollowWindow); err != nil && ctx.Err() == nil {
				log.Warn("approvals: editing the Slack posts of decided requests failed; tried again", "err", err)
			} else if n > 0 {
				log.Debug("approvals: Slack posts of decided requests to edit", "n", n)
			}
		}
	}
}

// mountSlackInteractions serves Slack's clicks on the API when a signing
// secret is configured. User groups among the approvers are resolved with
// the bot token (usergroups:read).
func mountSlackInteractions(cfg *Config, db *pgxpool.Pool, api *httpapi.Server, m *metrics.Metrics, log *slog.Logger) error {
	secret, err := signingSecret(&cfg.Notify.Approvals)
	if err != nil {
		return &ConfigError{err}
	}
	if secret == "" {
		if cfg.Notify.Approvals.Channel != "" && (cfg.Notify.SlackToken != "" || cfg.Notify.SlackTokenFile != "") {
			log.Warn("approvals: requests are posted to Slack, but their buttons decide nothing without the app's signing secret: set "+
				setting("Notify.Approvals.SigningSecret", "AGENTLEDGER_SLACK_SIGNING_SECRET")+" or "+
				setting("Notify.Approvals.SigningSecretFile", "--slack-signing-secret-file"), "channel", cfg.Notify.Approvals.Channel)
		}
		return nil
	}
	h := &slackui.Interactions{DB: db, Secret: secret, Log: log, Client: &http.Client{Timeout: 2 * time.Second},
		OnDecide: m.ApprovalClick}
	if cfg.Notify.SlackToken != "" || cfg.Notify.SlackTokenFile != "" {
		sink, err := slack.New(slack.Config{Token: cfg.Notify.SlackToken, TokenFile: cfg.Notify.SlackTokenFile,
			APIURL: cfg.Notify.SlackAPIURL, Logger: log})
		if err != nil {
			return &ConfigError{err}
		}
		h.Groups = sink.GroupMembers
	}
	api.Handle("POST "+slackui.Path, h)
	log.Info("approvals: serving Slack's interactivity", "path", slackui.Path, "user_groups", h.Groups != nil)
	return nil
}

// signingSecret is the configured signing secret, read from its file if
// need be; errors name the file, never its content.
func signingSecret(a *Approvals) (string, error) {
	switch {
	case a.SigningSecret != "" && a.SigningSecretFile != "":
		return "", errors.New("approvals: set the Slack signing secret or its file, not both")
	case a.SigningSecretFile != "":
		b, err := os.ReadFile(a.SigningSecretFile)
		if err != nil {
			var pe *os.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return "", fmt.Errorf("%s %s: %w", setting("Notify.Approvals.SigningSecretFile", "--slack-signing-secret-file"), a.SigningSecretFile, err)
		}
		s := strings.TrimSpace(string(b))
		if s == "" || strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
			return "", fmt.Errorf("%s %s: must hold one word, the app's signing secret",
				setting("Notify.Approvals.SigningSecretFile", "--slack-signing-secret-file"), a.SigningSecretFile)
		}
		return s, nil
	}
	return strings.TrimSpace(a.SigningSecret), nil
}

// String describes the settings with their signing secret hidden.
func (a Approvals) String() string {
	return fmt.Sprintf("Approvals{Channel:%q SigningSecret:%s SigningSecretFile:%q FollowInterval:%s}",
		a.Channel, shown(a.SigningSecret), a.SigningSecretFile, a.FollowInterval)
}

// GoString is String for %#v.
func (a Approvals) GoString() string { return "daemon." + a.String() }

// Format prints String (GoString for %#v) whatever the verb.
func (a Approvals) Format(f fmt.State, verb rune) {
	secretfmt.Format(f, verb, a.String(), a.GoString())
}

// LogValue is the Approvals settings for slog, their signing secret hidden.
func (a Approvals) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("channel", a.Channel),
		slog.String("signing_secret", shown(a.SigningSecret)),
		slog.String("signing_secret_file", a.SigningSecretFile),
		slog.Duration("follow_interval", a.FollowInterval),
	)
}
