package steps

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/saga"
)

// Need is what one call of a steps payload reaches, as far as the payload
// says it literally.
type Need struct {
	// Step is the call's journal place: "tool/<i>" for step i, and
	// saga.PathOf of it for the step's compensation.
	Step string
	// Subject names the call in messages: "step 2", "step 2's
	// compensation".
	Subject string
	grants.Need
}

// Needs lists what payload names literally, step by step, each step's
// compensation after it: the tool; for the HTTP tools the origin of a
// literal URL, for notify a literal channel, for create_task a literal
// child kind. A value made of an earlier result (one holding "${") is
// known only when the step runs, which checks it then, as it checks every
// call. A payload that does not parse needs nothing here: Check says why,
// and Work refuses it before any step.
func Needs(payload json.RawMessage) []Need {
	p, err := parse(payload)
	if err != nil {
		return nil
	}
	out := make([]Need, 0, len(p.Steps))
	for i, s := range p.Steps {
		subject := fmt.Sprintf("step %d", i)
		out = append(out, Need{Step: stepPath(i), Subject: subject, Need: literalNeed(s.Tool, s.Args)})
		if c := s.Compensate; c != nil {
			out = append(out, Need{Step: saga.PathOf(stepPath(i)), Subject: subject + "'s compensation",
				Need: literalNeed(c.Tool, c.Args)})
		}
	}
	return out
}

// literalNeed is what a call of tool with args reaches, as far as args say
// it literally (see Needs).
func literalNeed(tool string, args json.RawMessage) grants.Need {
	n := grants.Need{Tool: tool}
	// Decoded as the tools decode their arguments (field names matched
	// without regard to case, the last of a repeated one standing), so
	// that what is checked here is what the call will reach.
	var a struct {
		URL     json.RawMessage `json:"url"`
		Channel json.RawMessage `json:"channel"`
		Kind    json.RawMessage `json:"kind"`
	}
	if json.Unmarshal(args, &a) != nil {
		return n
	}
	literal := func(raw json.RawMessage) string {
		var v string
		if json.Unmarshal(raw, &v) != nil || strings.Contains(v, "${") {
			return ""
		}
		return v
	}
	switch tool {
	case "http_request", "unsafe_http":
		// Only a URL the tool would call: any other it refuses with its
		// own reason.
		if u, err := url.Parse(literal(a.URL)); err == nil && (u.Scheme == "http" || u.Scheme == "https") &&
			u.Hostname() != "" && u.User == nil {
			n.URL = u
		}
	case "notify":
		n.Channel = literal(a.Channel)
	case "create_task":
		n.Kind = literal(a.Kind)
	}
	return n
}
