package webhooks

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/secretfmt"
)

// Source types: how a source signs its deliveries and names them.
const (
	// TypeGitHub verifies X-Hub-Signature-256 and dedupes on
	// X-GitHub-Delivery; the event is X-GitHub-Event.
	TypeGitHub = "github"
	// TypeSlack verifies Slack's v0 signature within SlackMaxSkew, dedupes
	// on the Events API body's event_id and answers url_verification.
	TypeSlack = "slack"
	// TypeHMAC verifies a hex HMAC-SHA256 of the body in Source.Header and
	// dedupes on Source.DeliveryHeader.
	TypeHMAC = "hmac"
)

// Payload modes: what the task's payload is made of.
const (
	// PayloadEnvelope (the default) wraps the body:
	// {"source", "delivery_id", "event", "body"}.
	PayloadEnvelope = "envelope"
	// PayloadBody makes the delivery's JSON body the payload as it is.
	PayloadBody = "body"
)

// redacted stands in for the secret wherever a Source is printed.
const redacted = "[redacted]"

// sourceName is a source's path segment; it leaves room in the submission
// key hook:<source>:<delivery id> for a delivery id of maxDeliveryID bytes.
var sourceName = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,62}$`)

// Source is one webhook sender, mounted at POST /v1/hooks/{Name}, and the
// task each of its deliveries becomes. Printing a Source (fmt with any
// verb, slog, encoding/json) never shows its Secret.
type Source struct {
	// Name is the URL path segment: 1–63 of a-z, 0-9, '_', '.', '-',
	// starting with a letter or digit.
	Name string
	// Type is TypeGitHub, TypeSlack or TypeHMAC.
	Type string
	// Secret is the signing secret (GitHub's webhook secret, Slack's
	// signing secret, the generic HMAC key). It is never logged, never part
	// of an error or a response.
	Secret string

	// Header names the signature header of a TypeHMAC source: its value is
	// the hex HMAC-SHA256 of the raw body, optionally prefixed "sha256=".
	Header string
	// DeliveryHeader names the header carrying a TypeHMAC delivery's id.
	DeliveryHeader string
	// EventHeader optionally names the header carrying a TypeHMAC
	// delivery's event name (the envelope's "event").
	EventHeader string
	// TimestampHeader optionally names the header carrying a TypeHMAC
	// delivery's Unix time in seconds. Then the signature is the HMAC of
	// "<timestamp>.<delivery id>.<body>" and the timestamp must be within
	// MaxSkew of the handler's clock, so a captured delivery cannot be
	// sent again later, nor under another id.
	TimestampHeader string

	// Tenant of the tasks; default "default".
	Tenant string
	// Queue of the tasks; default "default".
	Queue string
	// Kind of the tasks; required.
	Kind string
	// Priority of the tasks, 0..100, lower first.
	Priority int16
	// MaxAttempts of the tasks; default claims.DefaultMaxAttempts.
	MaxAttempts int32
	// Payload is PayloadEnvelope (default) or PayloadBody.
	Payload string

	// Signal, when set, makes each delivery a signal of Tenant's instead
	// of a task: Kind, Queue, Priority, MaxAttempts and Payload are then
	// left unset.
	Signal *SignalMap
}

// Validate fills s's defaults and checks it. The error names the source
// and the field (as in the sources file), never the secret, and matches
// agentledger.ErrInvalid.
func (s *Source) Validate() error {
	if err := s.normalize(); err != nil {
		return s.errorf(err)
	}
	return nil
}

// normalize is Validate without naming the source in the error.
func (s *Source) normalize() error {
	if s.Payload == "" && s.Signal == nil {
		s.Payload = PayloadEnvelope
	}
	switch {
	case s.Name == "":
		return agentledger.Invalid("name", "is required")
	case !sourceName.MatchString(s.Name):
		return agentledger.Invalid("name", "%q must be 1-63 characters of a-z, 0-9, '_', '.' or '-', starting with a letter or digit", s.Name)
	case s.Type != TypeGitHub && s.Type != TypeSlack && s.Type != TypeHMAC:
		return agentledger.Invalid("type", "%q must be %q, %q or %q", s.Type, TypeGitHub, TypeSlack, TypeHMAC)
	case s.Secret == "":
		return agentledger.Invalid("secret", "is required")
	case s.Signal == nil && s.Payload != PayloadEnvelope && s.Payload != PayloadBody:
		return agentledger.Invalid("payload", "%q must be %q or %q", s.Payload, PayloadEnvelope, PayloadBody)
	}
	if s.Type == TypeHMAC {
		switch {
		case s.Header == "":
			return agentledger.Invalid("header", "is required for type %q", TypeHMAC)
		case !validHeaderName(s.Header):
			return agentledger.Invalid("header", "%q is not a header name", s.Header)
		case s.DeliveryHeader == "":
			return agentledger.Invalid("delivery_header", "is required for type %q", TypeHMAC)
		case !validHeaderName(s.DeliveryHeader):
			return agentledger.Invalid("delivery_header", "%q is not a header name", s.DeliveryHeader)
		case s.EventHeader != "" && !validHeaderName(s.EventHeader):
			return agentledger.Invalid("event_header", "%q is not a header name", s.EventHeader)
		case s.TimestampHeader != "" && !validHeaderName(s.TimestampHeader):
			return agentledger.Invalid("timestamp_header", "%q is not a header name", s.TimestampHeader)
		}
	} else {
		for _, f := range [...]struct{ name, value string }{
			{"header", s.Header}, {"delivery_header", s.DeliveryHeader}, {"event_header", s.EventHeader},
			{"timestamp_header", s.TimestampHeader},
		} {
			if f.value != "" {
				return agentledger.Invalid(f.name, "is only for type %q", TypeHMAC)
			}
		}
	}
	if s.Signal != nil {
		return s.normalizeSignal()
	}
	// The task template follows claims' rules; Validate fills its defaults.
	p := s.template()
	if err := p.Validate(); err != nil {
		return err
	}
	s.Tenant, s.Queue, s.MaxAttempts = p.Tenant, p.Queue, p.MaxAttempts
	return nil
}

// normalizeSignal checks a signal source: its map, its tenant, and no
// task template.
func (s *Source) normalizeSignal() error {
	for _, f := range [...]struct {
		name string
		set  bool
	}{{"kind", s.Kind != ""}, {"queue", s.Queue != ""}, {"priority", s.Priority != 0},
		{"max_attempts", s.MaxAttempts != 0}, {"payload", s.Payload != ""}} {
		if f.set {
			return agentledger.Invalid(f.name, "is for a source whose deliveries are tasks; this one's are signals (\"signal\")")
		}
	}
	if err := s.Signal.check(); err != nil {
		return err
	}
	// The tenant by claims' rule, as a task source's.
	p := claims.EnqueueParams{Tenant: s.Tenant, Kind: "signal"}
	if err := p.Validate(); err != nil {
		return err
	}
	s.Tenant = p.Tenant
	return nil
}

// errorf names the source in err.
func (s *Source) errorf(err error) error {
	if s.Name == "" || !sourceName.MatchString(s.Name) {
		return fmt.Errorf("webhooks: source: %w", err)
	}
	return fmt.Errorf("webhooks: source %q: %w", s.Name, err)
}

// template is the task every delivery becomes, without its payload and key.
func (s *Source) template() claims.EnqueueParams {
	return claims.EnqueueParams{
		Tenant:      s.Tenant,
		Queue:       s.Queue,
		Kind:        s.Kind,
		Priority:    s.Priority,
		MaxAttempts: s.MaxAttempts,
	}
}

// validHeaderName reports whether h is an HTTP field name (an RFC 9110
// token).
func validHeaderName(h string) bool {
	if h == "" || len(h) > 128 {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c < 0x80 && isTokenPunct(c):
		default:
			return false
		}
	}
	return true
}

func isTokenPunct(c byte) bool {
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}

// String describes the source with its secret redacted.
func (s Source) String() string {
	sig := ""
	if m := s.Signal; m != nil {
		sig = fmt.Sprintf(" Signal:{Name:%q NameFrom:%q KeyFrom:%q PayloadFrom:%q Retention:%s}", m.Name, m.NameFrom, m.KeyFrom,
			m.PayloadFrom, m.Retention)
	}
	return fmt.Sprintf("Source{Name:%q Type:%q Secret:%q Header:%q DeliveryHeader:%q EventHeader:%q Tenant:%q Queue:%q Kind:%q Priority:%d MaxAttempts:%d Payload:%q%s}",
		s.Name, s.Type, s.shownSecret(), s.Header, s.DeliveryHeader, s.EventHeader,
		s.Tenant, s.Queue, s.Kind, s.Priority, s.MaxAttempts, s.Payload, sig)
}

// GoString is String for %#v.
func (s Source) GoString() string { return "webhooks." + s.String() }

// Format prints String (GoString for %#v) whatever the verb, so that no
// verb prints the secret.
func (s Source) Format(f fmt.State, verb rune) { secretfmt.Format(f, verb, s.String(), s.GoString()) }

// LogValue is the source for slog, secret redacted.
func (s Source) LogValue() slog.Value {
	attrs := []slog.Attr{
		slog.String("name", s.Name),
		slog.String("type", s.Type),
		slog.String("secret", s.shownSecret()),
	}
	if s.Type == TypeHMAC {
		attrs = append(attrs, slog.String("header", s.Header),
			slog.String("delivery_header", s.DeliveryHeader), slog.String("event_header", s.EventHeader))
	}
	attrs = append(attrs,
		slog.String("tenant", s.Tenant),
		slog.String("queue", s.Queue),
		slog.String("kind", s.Kind),
		slog.Int("priority", int(s.Priority)),
		slog.Int("max_attempts", int(s.MaxAttempts)),
		slog.String("payload", s.Payload),
	)
	if m := s.Signal; m != nil {
		attrs = append(attrs, slog.Group("signal", slog.String("name", m.Name), slog.String("name_from", m.NameFrom),
			slog.String("key_from", m.KeyFrom), slog.String("payload_from", m.PayloadFrom), slog.Duration("retention", m.Retention)))
	}
	return slog.GroupValue(attrs...)
}

// MarshalJSON encodes the source in the sources file's format, secret
// redacted.
func (s Source) MarshalJSON() ([]byte, error) {
	return json.Marshal(sourceJSON{
		Name: s.Name, Type: s.Type, Secret: s.shownSecret(),
		Header: s.Header, DeliveryHeader: s.DeliveryHeader, EventHeader: s.EventHeader,
		Tenant: s.Tenant, Queue: s.Queue, Kind: s.Kind,
		Priority: s.Priority, MaxAttempts: s.MaxAttempts, Payload: s.Payload, Signal: s.Signal.toJSON(),
	})
}

// shownSecret is what printing shows of the secret: nothing or "[redacted]".
func (s Source) shownSecret() string {
	if s.Secret == "" {
		return ""
	}
	return redacted
}
