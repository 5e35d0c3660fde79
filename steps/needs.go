package steps

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/internal/refs"
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
	// ApproveChannel is the Slack channel the step's approval request is
	// posted to, when its "approve" names one: the tenant's grant must
	// allow it as it would a notify call's.
	ApproveChannel string
	// Child is the payload of the task a create_task call queues (absent
	// or null: {}), of kind Need.Kind, when the call names both literally
	// (no "${" in either, escaped or not): what the child names is then
	// known before the parent is queued (package admit checks it with the
	// parent's grant). Nil otherwise.
	Child json.RawMessage
	// ChildQueue is the child's queue when Child is set and the call names
	// it literally ("" for the default queue); ChildQueueKnown is false
	// when it is made of an earlier result.
	ChildQueue      string
	ChildQueueKnown bool
}

// Needs lists what payload names literally, step by step, each step's
// compensation after it: the tool; for the HTTP tools the origin of a
// literal URL, or of one whose part before its first "${" already ends
// its host; for notify a literal channel; for create_task a literal child
// kind, and the child's payload when that is literal too. A value made of
// an earlier result (one holding "${") is known only when the step runs,
// which checks it then, as it checks every call. A payload that does not
// parse needs nothing here: Check says why, and Work refuses it before any
// step.
func Needs(payload json.RawMessage) []Need {
	p, err := parse(payload)
	if err != nil {
		return nil
	}
	out := make([]Need, 0, len(p.Steps))
	for i, s := range p.Steps {
		n := literalNeed(s.Tool, s.Args)
		n.Step, n.Subject = stepPath(i), fmt.Sprintf("step %d", i)
		if s.Approve != nil {
			n.ApproveChannel = s.Approve.Channel
		}
		out = append(out, n)
		if c := s.Compensate; c != nil {
			n := literalNeed(c.Tool, c.Args)
			n.Step, n.Subject = saga.PathOf(stepPath(i)), fmt.Sprintf("step %d's compensation", i)
			out = append(out, n)
		}
	}
	return out
}

// templateRE matches the start of any ${…}: a value holding one may change
// when the step runs, whether or not it refers to a result.
var templateRE = regexp.MustCompile(`\$\{`)

// literalNeed is what a call of tool with args reaches, as far as args say
// it literally (see Needs).
func literalNeed(tool string, args json.RawMessage) Need {
	n := Need{Need: grants.Need{Tool: tool}}
	// Decoded as the tool will decode its arguments: after the runner has
	// rewritten them (resolve: a repeated key's last value kept, keys
	// sorted), field names matched without regard to case, the last of a
	// repeated one standing; so that what is checked here is what the call
	// will reach.
	var a struct {
		URL     json.RawMessage `json:"url"`
		Channel json.RawMessage `json:"channel"`
		Kind    json.RawMessage `json:"kind"`
		Queue   json.RawMessage `json:"queue"`
		Payload json.RawMessage `json:"payload"`
	}
	if json.Unmarshal(asRun(args), &a) != nil {
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
		n.URL = target(a.URL)
	case "notify":
		n.Channel = literal(a.Channel)
	case "create_task":
		n.Kind = literal(a.Kind)
		switch {
		case n.Kind == "" || len(refs.Find(a.Payload, templateRE)) > 0:
		case len(a.Payload) == 0 || string(a.Payload) == "null":
			n.Child = json.RawMessage(`{}`) // what create_task queues
		default:
			n.Child = a.Payload
		}
		if n.Child != nil {
			var q string
			switch {
			case len(a.Queue) == 0 || string(a.Queue) == "null":
				n.ChildQueueKnown = true
			case json.Unmarshal(a.Queue, &q) == nil && !strings.Contains(q, "${"):
				n.ChildQueue, n.ChildQueueKnown = q, true // "" is the default queue, as create_task takes it
			}
		}
	}
	return n
}

// target is the URL a call of the HTTP tools reaches, as far as raw, its
// url argument, says it: the whole URL when it is literal; when it holds
// "${", the origin written before the first "${" if that part already
// ends the host with "/", "?" or "#" (https://x.example/a?q=${…}), since
// what is put in after cannot take the call to another host. A "${" in
// the host (https://${…}/, https://api.${…}) is known only when the call
// runs. Nil too for a URL the tool would not call: it refuses it for its
// own reason.
func target(raw json.RawMessage) *url.URL {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return nil
	}
	if before, _, templated := strings.Cut(s, "${"); templated {
		scheme, rest, ok := strings.Cut(before, "://")
		end := strings.IndexAny(rest, "/?#")
		if !ok || end < 0 {
			return nil
		}
		s = scheme + "://" + rest[:end]
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil {
		return nil
	}
	return u
}

// asRun is args, valid JSON, as the runner hands them to the tool
// (resolve), with each reference left as written; args when they do not
// decode.
func asRun(args json.RawMessage) json.RawMessage {
	out, err := refs.Resolve(args, refRE, func(m []string) (any, error) { return m[0], nil })
	if err != nil {
		return args
	}
	return out
}
