package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/canonjson"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/notify"
)

// notifyTarget scopes the downstream key handed to sinks.
const notifyTarget = "notify"

// Limits of a notify call's arguments (Slack's own limits).
const (
	maxChannel = 80
	maxText    = 40000
)

// Notify is the notify tool: it posts a message to a notify.Sink as a
// reconcilable effect. The sink gets the ledger's downstream key for the
// call, so a post whose outcome was lost is found again instead of sent
// twice.
type Notify struct {
	sink notify.Sink
}

// NewNotify returns the notify tool posting to sink.
func NewNotify(sink notify.Sink) *Notify { return &Notify{sink: sink} }

// Name is "notify".
func (*Notify) Name() string { return "notify" }

// Description tells the model what the tool does.
func (*Notify) Description() string {
	return "Post a text message to a notification channel (for example ops). Each call posts at most once."
}

// Parameters is the JSON Schema of the arguments.
func (*Notify) Parameters() json.RawMessage {
	return json.RawMessage(`{"type":"object","additionalProperties":false,"required":["channel","text"],"properties":{` +
		`"channel":{"type":"string","minLength":1,"maxLength":80},` +
		`"text":{"type":"string","minLength":1,"maxLength":40000}}}`)
}

// notifyArgs are the tool's arguments.
type notifyArgs struct {
	Channel string `json:"channel"`
	Text    string `json:"text"`
}

// Effect validates the arguments and returns a reconcilable effect,
// operation "notify": Perform posts, Reconcile finds an earlier post by
// its key. Both answer {"channel", "ref"} with the sink's ref as the
// external reference.
func (n *Notify) Effect(call Call) (ledger.Effect, error) {
	if n.sink == nil {
		return ledger.Effect{}, agentledger.Permanent(errors.New("notify: no notification sink is configured"))
	}
	var a notifyArgs
	dec := json.NewDecoder(bytes.NewReader(call.Args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return ledger.Effect{}, agentledger.Permanent(fmt.Errorf("notify: arguments must be {\"channel\", \"text\"}: %v", err))
	}
	switch {
	case a.Channel == "" || len(a.Channel) > maxChannel || strings.ContainsFunc(a.Channel, isSpaceOrControl):
		return ledger.Effect{}, agentledger.Permanent(fmt.Errorf(
			"notify: channel %q must be 1-%d characters without spaces", a.Channel, maxChannel))
	case strings.TrimSpace(a.Text) == "":
		return ledger.Effect{}, agentledger.Permanent(errors.New("notify: text is empty"))
	case utf8.RuneCountInString(a.Text) > maxText:
		return ledger.Effect{}, agentledger.Permanent(fmt.Errorf("notify: text is longer than %d characters", maxText))
	}
	request, err := canonjson.MarshalValue(a)
	if err != nil {
		return ledger.Effect{}, agentledger.Permanent(fmt.Errorf("notify: %v", err))
	}
	msg := notify.Message{Channel: a.Channel, Text: a.Text}
	return ledger.Effect{
		Operation: "notify", StepPath: call.StepPath, Class: ledger.Reconcilable, Request: request,
		Perform: func(ctx context.Context, c ledger.Call) (ledger.Result, error) {
			ref, err := n.sink.Post(ctx, c.DownstreamKey(notifyTarget), msg)
			if err != nil {
				return ledger.Result{}, fmt.Errorf("notify: %w", err)
			}
			return posted(msg.Channel, ref), nil
		},
		Reconcile: func(ctx context.Context, c ledger.Call) (ledger.Result, bool, error) {
			ref, found, err := n.sink.Find(ctx, c.DownstreamKey(notifyTarget), msg, time.Time{})
			if err != nil || !found {
				return ledger.Result{}, false, err
			}
			return posted(msg.Channel, ref), true, nil
		},
	}, nil
}

func posted(channel, ref string) ledger.Result {
	body, _ := json.Marshal(map[string]string{"channel": channel, "ref": ref}) // strings always encode
	return ledger.Result{Body: body, ExternalRef: ref}
}

func isSpaceOrControl(r rune) bool { return r <= ' ' || r == 0x7f }
