package slack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	slackgo "github.com/slack-go/slack"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/internal/secretfmt"
	"github.com/agentledger/agentledger/notify"
)

// metadataEventType marks the messages the sink posts; their metadata
// payload carries the effect key under "key".
const metadataEventType = "agentledger_effect"

// Sink posts notifications to Slack with chat.postMessage, each
// carrying its effect key in the message metadata, and finds them again in
// the channel history. It waits out 429s (up to MaxRetryAfter), paces posts
// per channel and per workspace, and answers permanent Slack errors as
// agentledger.Permanent. It is safe for concurrent use.
//
// Post does not read the history first: a key posted earlier by this sink
// (in this process) answers the first ref, and across processes the
// ledger's Reconcile (Find) runs before a post whose outcome is unknown.
type Sink struct {
	api           *slackgo.Client
	redact        func(string) string // scrubs the token from text
	log           *slog.Logger
	pace          *pacer
	fleet         FleetPacer // nil: this process's pacer only
	maxRetryAfter time.Duration
	shown         string // String's answer
	clock         slackClock

	mu     sync.Mutex
	ids    map[string]string // channel name (without "#") → ID
	posted memo              // key → ref of this sink's posts
}

var _ notify.Sink = (*Sink)(nil)

// New returns a sink for cfg. It makes no call to Slack.
func New(cfg Config) (*Sink, error) {
	tok, err := cfg.token()
	if err != nil {
		return nil, err
	}
	opts := []slackgo.Option{}
	if cfg.APIURL != "" {
		u := cfg.APIURL
		if !strings.HasSuffix(u, "/") {
			u += "/"
		}
		opts = append(opts, slackgo.OptionAPIURL(u))
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: defaultTimeout}
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	interval := orDefault(cfg.PerChannelInterval, DefaultPerChannelInterval)
	rate := orDefault(cfg.WorkspaceRate, DefaultWorkspaceRate)
	burst := orDefault(cfg.WorkspaceBurst, DefaultWorkspaceBurst)
	s := &Sink{
		redact:        func(s string) string { return strings.ReplaceAll(s, tok, redacted) },
		log:           log,
		pace:          newPacer(interval, rate, burst),
		fleet:         cfg.Fleet,
		maxRetryAfter: orDefault(cfg.MaxRetryAfter, DefaultMaxRetryAfter),
		shown:         fmt.Sprintf("slack.Sink{%s}", cfg),
		ids:           map[string]string{},
		posted:        memo{refs: map[string]string{}},
	}
	// Every answer's Date header tells the sink Slack's clock (Find); no
	// request goes out past its delivery's deadline (deadline.go).
	opts = append(opts, slackgo.OptionHTTPClient(withClock(withDeadline(hc), &s.clock)))
	s.api = slackgo.New(tok, opts...)
	return s, nil
}

// orDefault is v, or def when v is zero.
func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Post posts m to m.Channel (a name or an ID) under key, carried in the
// message metadata, and returns "<channel ID>/<ts>". The text goes in
// Block Kit sections, under a header (Title) and fields, over a footer.
// Errors: a *Error, permanent when retrying cannot help;
// agentledger.RetryAfter when Slack asks for a longer wait than
// MaxRetryAfter; anything else is transient and the post may or may not
// have landed (Find tells).
func (s *Sink) Post(ctx context.Context, key string, m notify.Message) (string, error) {
	return s.post(ctx, key, m)
}

// post is Post with extra blocks after m's.
func (s *Sink) post(ctx context.Context, key string, m notify.Message, extra ...slackgo.Block) (string, error) {
	if key == "" {
		return "", agentledger.Permanent(errors.New("notify: slack: empty key"))
	}
	if m.Channel == "" {
		return "", agentledger.Permanent(errors.New("notify: slack: no channel"))
	}
	if ref, ok := s.posted.get(key); ok {
		return ref, nil
	}
	opts := append(slackOptions(m, false, extra...), slackgo.MsgOptionMetadata(slackgo.SlackMetadata{
		EventType: metadataEventType, EventPayload: map[string]any{"key": key},
	}))
	var ch, ts string
	err := s.call(ctx, op{method: "chat.postMessage", channel: m.Channel, key: key, paced: true}, func(ctx context.Context) error {
		var err error
		ch, ts, err = s.api.PostMessageContext(ctx, m.Channel, opts...)
		return err
	})
	if err != nil {
		return "", err
	}
	if at, ok := parseTS(ts); ok { // Slack's clock, to the microsecond
		s.clock.observe(at, time.Now())
	}
	s.remember(m.Channel, ch)
	ref := ch + "/" + ts
	s.posted.put(key, ref)
	s.log.Debug("slack message posted", "channel", m.Channel, "ref", ref, "key", notify.ShortKey(key))
	return ref, nil
}

// Update replaces the content of the message ref (as Post returned it)
// with m, rendered as Post renders it: parts m lacks (a title, fields)
// disappear. m.Channel is not used. The message keeps its metadata, so
// Find still finds it. Errors are Post's; a message Slack cannot update
// answers an error matching ErrMessageGone.
func (s *Sink) Update(ctx context.Context, ref string, m notify.Message) error {
	ch, ts, err := ParseRef(ref)
	if err != nil {
		return agentledger.Permanent(err)
	}
	err = s.call(ctx, op{method: "chat.update", channel: ch, paced: true}, func(ctx context.Context) error {
		_, _, _, err := s.api.UpdateMessageContext(ctx, ch, ts, slackOptions(m, true)...)
		return err
	})
	if err == nil {
		s.log.Debug("slack message updated", "ref", ref)
	}
	return err
}

// ParseRef splits a Sink ref into channel ID and ts.
func ParseRef(ref string) (channel, ts string, err error) {
	channel, ts, ok := strings.Cut(ref, "/")
	if !ok || channel == "" || ts == "" || strings.Contains(ts, "/") {
		return "", "", fmt.Errorf("notify: slack: %q is not a Slack message ref (<channel ID>/<ts>)", ref)
	}
	return channel, ts, nil
}

// String describes the sink; it never shows the token.
func (s *Sink) String() string { return s.shown }

// GoString is String for %#v.
func (s *Sink) GoString() string { return "&slackgo." + s.shown }

// Format prints String (GoString for %#v) whatever the verb.
func (s *Sink) Format(f fmt.State, verb rune) { secretfmt.Format(f, verb, s.String(), s.GoString()) }

// LogValue describes the sink for slog, without the token.
func (s *Sink) LogValue() slog.Value { return slog.StringValue(s.shown) }

// memoSize bounds the keys a sink remembers having posted.
const memoSize = 4096

// memo remembers the refs of recent posts by key, the oldest forgotten
// first. Its methods are safe for concurrent use.
type memo struct {
	mu    sync.Mutex
	refs  map[string]string
	order []string
}

func (m *memo) get(key string) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ref, ok := m.refs[key]
	return ref, ok
}

func (m *memo) put(key, ref string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.refs[key]; ok {
		return
	}
	if len(m.order) >= memoSize {
		delete(m.refs, m.order[0])
		m.order = m.order[1:]
	}
	m.refs[key] = ref
	m.order = append(m.order, key)
}
