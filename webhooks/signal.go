package webhooks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/canonjson"
	"github.com/agentledger/agentledger/waits"
)

// SignalMap makes a source's deliveries signals instead of tasks: each
// delivery wakes the task waiting for the signal its body names (a
// payment provider's callback resumes the task that waits for the
// payment), or is kept for one until its retention ends. Its dedupe key
// is the delivery's ("hook:<source>:<delivery id>"), so a redelivery is
// the same signal.
type SignalMap struct {
	// Name is the signal's name ("payment.settled"); or NameFrom, a JSON
	// pointer (RFC 6901) to a string in the body, takes it from each
	// delivery (Stripe's "/type"). Exactly one is set.
	Name, NameFrom string
	// KeyFrom is a JSON pointer to the correlation key in the body, a
	// string or an integer ("/data/object/metadata/order_id").
	KeyFrom string
	// PayloadFrom, a JSON pointer, picks the payload — the waiting step's
	// result — out of the body; empty is the whole body.
	PayloadFrom string
	// Retention is how long a signal no task waits for yet is kept; zero
	// is waits.DefaultRetention.
	Retention time.Duration
}

// signalJSON is a source's "signal" in the sources file.
type signalJSON struct {
	Name        string `json:"name,omitempty"`
	NameFrom    string `json:"name_from,omitempty"`
	KeyFrom     string `json:"key_from"`
	PayloadFrom string `json:"payload_from,omitempty"`
	Retention   string `json:"retention,omitempty"`
}

func (m *SignalMap) toJSON() *signalJSON {
	if m == nil {
		return nil
	}
	j := &signalJSON{Name: m.Name, NameFrom: m.NameFrom, KeyFrom: m.KeyFrom, PayloadFrom: m.PayloadFrom}
	if m.Retention != 0 {
		j.Retention = m.Retention.String()
	}
	return j
}

func (j *signalJSON) toMap() (*SignalMap, error) {
	if j == nil {
		return nil, nil
	}
	m := &SignalMap{Name: j.Name, NameFrom: j.NameFrom, KeyFrom: j.KeyFrom, PayloadFrom: j.PayloadFrom}
	if j.Retention != "" {
		d, err := time.ParseDuration(j.Retention)
		if err != nil {
			return nil, agentledger.Invalid("signal.retention", "%q is not a duration, like 72h", j.Retention)
		}
		if d == 0 {
			return nil, agentledger.Invalid("signal.retention", "0s must be from 1s to %s (leave it out for the default)", agentledger.DurationText(waits.MaxRetention))
		}
		m.Retention = d
	}
	return m, nil
}

// check checks m, its errors naming the sources file's field.
func (m *SignalMap) check() error {
	switch {
	case (m.Name == "") == (m.NameFrom == ""):
		return agentledger.Invalid("signal.name", `give "name" (the signal's name) or "name_from" (a JSON pointer to it in the body), one of them`)
	case m.NameFrom != "" && !validPointer(m.NameFrom):
		return agentledger.Invalid("signal.name_from", "%q is not a JSON pointer into the body, like /type", m.NameFrom)
	case m.KeyFrom == "":
		return agentledger.Invalid("signal.key_from", "is required: a JSON pointer to the correlation key in the body, like /data/object/metadata/order_id")
	case !validPointer(m.KeyFrom):
		return agentledger.Invalid("signal.key_from", "%q is not a JSON pointer into the body, like /data/object/metadata/order_id", m.KeyFrom)
	case m.PayloadFrom != "" && !validPointer(m.PayloadFrom):
		return agentledger.Invalid("signal.payload_from", "%q is not a JSON pointer into the body, like /data/object", m.PayloadFrom)
	}
	// The name and retention by the signals' own rules.
	p := waits.SignalParams{Name: m.Name, Key: "k", SentBy: "webhook", Retention: m.Retention}
	if m.Name == "" {
		p.Name = "n"
	}
	if err := p.Validate(); err != nil {
		if ie, ok := err.(*agentledger.InvalidError); ok {
			return agentledger.Invalid("signal."+ie.Field, "%s", ie.Problem)
		}
		return err
	}
	return nil
}

// signalOf reads the signal a delivery's body names: its name, its key and
// its payload. The errors say what the body lacks (422).
func (m *SignalMap) signalOf(body json.RawMessage) (name, key string, payload json.RawMessage, err error) {
	// A key given twice in an object is read as its last copy here and
	// may be read as its first by the sender: the API refuses such a body
	// (400), and so does a signal source.
	if _, err := canonjson.Marshal(body); err != nil {
		return "", "", nil, fmt.Errorf("the body is not JSON whose objects give each key once (%s)", strings.TrimPrefix(err.Error(), "canonjson: "))
	}
	name = m.Name
	if m.NameFrom != "" {
		v, err := pointer(body, m.NameFrom)
		if err != nil {
			return "", "", nil, err
		}
		if err := json.Unmarshal(v, &name); err != nil {
			return "", "", nil, fmt.Errorf("the signal's name at %s is not a string", m.NameFrom)
		}
	}
	v, err := pointer(body, m.KeyFrom)
	if err != nil {
		return "", "", nil, err
	}
	if err := json.Unmarshal(v, &key); err != nil {
		var n json.Number
		dec := json.NewDecoder(bytes.NewReader(v))
		dec.UseNumber()
		if dec.Decode(&n) != nil {
			return "", "", nil, fmt.Errorf("the correlation key at %s is not a string or a number", m.KeyFrom)
		}
		// An integer's digits, whatever its size (an order number past
		// 2^63 too); 7.5, 7.0 and 7e0 are not one key's spelling.
		if !integerDigits.MatchString(n.String()) {
			return "", "", nil, fmt.Errorf("the correlation key at %s is a number that is not an integer", m.KeyFrom)
		}
		key = n.String()
	}
	payload = body
	if m.PayloadFrom != "" {
		if payload, err = pointer(body, m.PayloadFrom); err != nil {
			return "", "", nil, err
		}
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, payload); err != nil {
		return "", "", nil, err
	}
	return name, key, buf.Bytes(), nil
}

// validPointer reports whether p is a JSON pointer to a part of the body:
// "/" and reference tokens, "~" escaped as ~0 and ~1.
func validPointer(p string) bool {
	if !strings.HasPrefix(p, "/") || len(p) > 1024 {
		return false
	}
	for i := 0; i < len(p); i++ {
		if p[i] == '~' && (i+1 == len(p) || (p[i+1] != '0' && p[i+1] != '1')) {
			return false
		}
	}
	return true
}

// pointer returns the value at JSON pointer p (RFC 6901) in doc.
func pointer(doc json.RawMessage, p string) (json.RawMessage, error) {
	v := doc
	for _, tok := range strings.Split(p[1:], "/") {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		switch b := bytes.TrimSpace(v); {
		case len(b) > 0 && b[0] == '{':
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(b, &obj); err != nil {
				return nil, err
			}
			next, ok := obj[tok]
			if !ok {
				return nil, fmt.Errorf("the body has nothing at %s (no %q)", p, tok)
			}
			v = next
		case len(b) > 0 && b[0] == '[':
			var arr []json.RawMessage
			if err := json.Unmarshal(b, &arr); err != nil {
				return nil, err
			}
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(arr) || strconv.Itoa(i) != tok {
				return nil, fmt.Errorf("the body has nothing at %s (no element %q in an array of %d)", p, tok, len(arr))
			}
			v = arr[i]
		default:
			return nil, fmt.Errorf("the body has nothing at %s (%q is not inside an object or an array)", p, tok)
		}
	}
	if bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
		return nil, fmt.Errorf("the body has null at %s", p)
	}
	return v, nil
}

// integerDigits is a JSON integer written as digits alone.
var integerDigits = regexp.MustCompile(`^(0|-?[1-9][0-9]*)$`)
