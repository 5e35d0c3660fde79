package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/canonjson"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/notify/outbox"
	"github.com/agentledger/agentledger/tools"
)

// Limits of a notify call's arguments (Slack's own limits).
const (
	maxChannel = 80
	maxText    = 40000
)

// Tool is the notify tool. A call writes its message to the outbox as a
// local effect — the event commits with the call's ledger row, or neither
// does — and the dispatcher's Deliverer posts it, as its own effect keyed
// by the call's step. So the task never waits on Slack, and a call can
// never be unknown.
type Tool struct{}

var _ tools.Tool = (*Tool)(nil)

// NewTool returns the notify tool.
func NewTool() *Tool { return &Tool{} }

// Name is "notify".
func (*Tool) Name() string { return "notify" }

// Description tells the model what the tool does.
func (*Tool) Description() string {
	return "Post a text message to a notification channel (for example ops). Each call posts at most once."
}

// Parameters is the JSON Schema of the arguments.
func (*Tool) Parameters() json.RawMessage {
	return json.RawMessage(`{"type":"object","additionalProperties":false,"required":["channel","text"],"properties":{` +
		`"channel":{"type":"string","minLength":1,"maxLength":80,"pattern":"^[^\\x00-\\x20\\x7f]+$","description":"a channel name, without spaces"},` +
		`"text":{"type":"string","minLength":1,"maxLength":40000,"pattern":"\\S","description":"the message, not blank"}}}`)
}

// notifyArgs are the tool's arguments.
type notifyArgs struct {
	Channel string `json:"channel"`
	Text    string `json:"text"`
}

// Reach is the channel, for the tenant's grant.
func (n *Tool) Reach(call tools.Call) (grants.Need, error) {
	var a notifyArgs
	if err := json.Unmarshal(call.Args, &a); err != nil {
		return grants.Need{}, agentledger.Permanent(fmt.Errorf("notify: arguments must be {\"channel\", \"text\"}: %v", err))
	}
	return grants.Need{Channel: a.Channel}, nil
}

// Effect validates the arguments and returns a local effect, operation
// "notify", that writes the message's outbox event and answers
// {"channel", "event"}, the event id as the external reference
// ("outbox:<id>").
func (n *Tool) Effect(call tools.Call) (ledger.Effect, error) {
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
	return ledger.Effect{
		Operation: "notify", StepPath: call.StepPath, Class: ledger.Local, Request: request,
		PerformLocal: func(ctx context.Context, c ledger.Call, db ledger.DB) (ledger.Result, error) {
			at := c.Attempt
			id, err := outbox.AddMessage(ctx, db, outbox.Message{Tenant: at.Tenant, TaskID: at.TaskID,
				Generation: at.Generation, Attempt: call.Task.Attempt, StepPath: call.StepPath, Channel: a.Channel, Text: a.Text})
			if err != nil {
				return ledger.Result{}, err
			}
			body, _ := json.Marshal(map[string]any{"channel": a.Channel, "event": id}) // always encodes
			return ledger.Result{Body: body, ExternalRef: fmt.Sprintf("outbox:%d", id)}, nil
		},
	}, nil
}

func isSpaceOrControl(r rune) bool { return r <= ' ' || r == 0x7f }
