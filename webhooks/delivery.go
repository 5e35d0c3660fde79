package webhooks

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/agentledger/agentledger"
)

// Limits on what a delivery names.
const (
	// maxDeliveryID keeps hook:<source>:<id> within claims.ValidKey's 255.
	maxDeliveryID = 128
	maxEvent      = 256
)

// delivery is an authenticated request, parsed.
type delivery struct {
	id    string
	event string
	body  json.RawMessage // valid JSON
	hash  []byte          // what the inbox turns away a second of (Source.dedupeHash)
	// bodyHash is the SHA-256 of the raw body alone: what the inbox held
	// as hash before timestamped sources hashed their id with it.
	bodyHash []byte
	// challenge is set for Slack's url_verification handshake, which
	// is answered, not stored.
	challenge *string
}

// slackBody is what the handler reads of a Slack Events API body.
type slackBody struct {
	Type      string          `json:"type"`
	Challenge *string         `json:"challenge"`
	EventID   string          `json:"event_id"`
	Event     json.RawMessage `json:"event"`
}

// parse reads the delivery id, the event and the JSON body of an
// authenticated request.
func (s *Source) parse(h http.Header, body []byte) (*delivery, *rejection) {
	d := &delivery{}
	idHeader, eventHeader := s.DeliveryHeader, s.EventHeader
	if s.Type == TypeGitHub {
		idHeader, eventHeader = HeaderGitHubDelivery, HeaderGitHubEvent
	}
	if idHeader != "" { // a Slack delivery's id and event are in its body
		var p *rejection
		if d.id, p = oneHeader(h, idHeader, agentledger.CodeInvalidDeliveryID); p != nil {
			return nil, p
		}
		if eventHeader != "" {
			if d.event, p = oneHeader(h, eventHeader, agentledger.CodeMalformedRequest); p != nil {
				return nil, p
			}
		}
	}
	switch s.Type {
	case TypeGitHub:
		var p *rejection
		if d.body, p = githubJSON(h, body); p != nil {
			return nil, p
		}
	case TypeSlack:
		if mt, _, _ := mime.ParseMediaType(h.Get("Content-Type")); mt == "application/x-www-form-urlencoded" {
			// A slash command or an interactive click: they carry no
			// event_id to deduplicate on.
			return nil, newProblem(agentledger.CodeInvalidBody, "a form-encoded Slack request (a slash command, an interactive "+
				"action) is not an Events API delivery, which this source takes: it carries no event_id")
		}
		d.body = body
		var sb slackBody
		if json.Valid(body) && json.Unmarshal(body, &sb) == nil {
			if sb.Type == "url_verification" && sb.Challenge != nil {
				d.challenge = sb.Challenge
				return d, nil
			}
			d.id, d.event = sb.EventID, sb.Type
			var ev struct {
				Type string `json:"type"`
			}
			if json.Unmarshal(sb.Event, &ev) == nil && ev.Type != "" {
				d.event = ev.Type
			}
		}
	default:
		d.body = body
	}
	if !json.Valid(d.body) {
		return nil, newProblem(agentledger.CodeInvalidBody, "the body is not JSON")
	}
	switch {
	case d.id == "":
		return nil, newProblem(agentledger.CodeMissingDeliveryID, "the delivery carries no delivery id (%s)", s.deliveryField())
	case !validDeliveryID(d.id):
		return nil, newProblem(agentledger.CodeInvalidDeliveryID,
			"the delivery id (%s) must be 1-%d printable ASCII characters without spaces", s.deliveryField(), maxDeliveryID)
	}
	if len(d.event) > maxEvent {
		d.event = d.event[:maxEvent]
	}
	return d, nil
}

// oneHeader is the one value of the header name, "" if it is absent,
// or code's problem naming it. Given twice, or folded by a proxy into one
// line of comma-separated values (RFC 9110 section 5.3), it is two
// readings of one delivery: which one to take would be a guess. Only
// delivery ids and event names are read so, single tokens that hold no
// comma (GitHub's GUIDs, names such as pull_request); a signature header,
// which may, is not.
func oneHeader(h http.Header, name string, code agentledger.Code) (string, *rejection) {
	vs := h.Values(name)
	switch {
	case len(vs) == 0:
		return "", nil
	case len(vs) > 1:
		return "", newProblem(code, "the header %s is given %d times", name, len(vs))
	case strings.Contains(vs[0], ","):
		return "", newProblem(code, "the header %s holds a comma-separated list (as a proxy folds a header given "+
			"more than once into one line); it takes one value, without a comma", name)
	}
	return vs[0], nil
}

// githubJSON is the JSON of a GitHub delivery: the body, or its "payload"
// field when the webhook sends application/x-www-form-urlencoded.
func githubJSON(h http.Header, body []byte) (json.RawMessage, *rejection) {
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	if mt != "application/x-www-form-urlencoded" {
		return body, nil
	}
	form, err := url.ParseQuery(string(body))
	switch {
	case err != nil:
		return nil, newProblem(agentledger.CodeInvalidBody, "the form-encoded body does not parse: %v", err)
	case len(form["payload"]) != 1:
		return nil, newProblem(agentledger.CodeInvalidBody,
			"a form-encoded GitHub delivery carries its JSON in one payload field; this one has %d", len(form["payload"]))
	}
	return []byte(form.Get("payload")), nil
}

// deliveryField names where s's delivery id comes from.
func (s *Source) deliveryField() string {
	switch s.Type {
	case TypeGitHub:
		return "header " + HeaderGitHubDelivery
	case TypeSlack:
		return `the body's "event_id"`
	}
	return "header " + s.DeliveryHeader
}

func validDeliveryID(id string) bool {
	if len(id) < 1 || len(id) > maxDeliveryID {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= ' ' || id[i] > '~' {
			return false
		}
	}
	return true
}

// payload is the task payload of d.
func (s *Source) payload(d *delivery) (json.RawMessage, error) {
	if s.Payload == PayloadBody {
		var buf bytes.Buffer
		if err := json.Compact(&buf, d.body); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	}
	return json.Marshal(struct {
		Source     string          `json:"source"`
		DeliveryID string          `json:"delivery_id"`
		Event      string          `json:"event"`
		Body       json.RawMessage `json:"body"`
	}{s.Name, d.id, d.event, d.body})
}

// dedupeHash is what the inbox's unique index on (source, body_hash) holds
// of a delivery: the SHA-256 of the raw body where the signature covers
// the body alone (github, hmac without a timestamp), so that a captured
// delivery sent again under a fresh id is a duplicate. Where it covers
// the delivery id too (hmac with a timestamp: "<timestamp>.<id>.<body>"),
// a fresh id is the sender's own, and two deliveries may carry the same
// body — two payments settled alike, a signal sent again after the first
// expired — so the id is hashed with the body. (Slack's covers the body,
// which holds its event_id.)
func (s *Source) dedupeHash(id string, body []byte) []byte {
	if s.Type != TypeHMAC || s.TimestampHeader == "" {
		return bodyHash(body)
	}
	h := sha256.New()
	h.Write([]byte(id + ".")) // ids hold no '.'
	h.Write(body)
	return h.Sum(nil)
}

func bodyHash(body []byte) []byte {
	sum := sha256.Sum256(body)
	return sum[:]
}
