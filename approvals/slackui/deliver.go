package slackui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/approvals"
	"github.com/agentledger/agentledger/canonjson"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/notify"
	"github.com/agentledger/agentledger/notify/outbox"
	"github.com/agentledger/agentledger/notify/slack"
)

// ButtonSink is a sink that can put buttons under a message (Slack's).
type ButtonSink interface {
	PostButtons(ctx context.Context, key string, m notify.Message, blockID string, buttons []slack.Button) (string, error)
}

// Deliverer delivers the outbox events of approval requests through the
// ledger, as notify.Deliverer does a rule's — a post, then an edit in
// place — and hands every other event to Next.
type Deliverer struct {
	Store  *approvals.Store
	Ledger *ledger.Ledger
	// Sink posts and edits; with ButtonSink (Slack) the post carries
	// the buttons, otherwise (the console) it draws them in its text.
	Sink notify.Sink
	Next outbox.Handler
}

var _ outbox.Handler = (*Deliverer)(nil)

// Deliver posts or edits the message of an approval event; any other
// event is Next's.
func (d *Deliverer) Deliver(ctx context.Context, c outbox.Claimed) (string, error) {
	if c.Event.Event != EventAsk && c.Event.Event != EventDecided && c.Event.Event != EventOutcome {
		return d.Next.Deliver(ctx, c)
	}
	channel, err := d.deliver(ctx, c)
	if errors.Is(err, agentledger.ErrKeyReuse) {
		return "", agentledger.Permanent(err)
	}
	return channel, err
}

// deliver returns the channel of the post it edited (see outbox.Handler),
// "" when it posted to c.Channel or did nothing.
func (d *Deliverer) deliver(ctx context.Context, c outbox.Claimed) (string, error) {
	var p struct {
		Request int64  `json:"request"`
		Outcome string `json:"outcome"`
	}
	if err := json.Unmarshal(c.Payload, &p); err != nil || p.Request == 0 {
		return "", agentledger.Permanent(fmt.Errorf("event %d: payload names no approval request", c.ID))
	}
	r, err := d.Store.Get(ctx, "", p.Request)
	if errors.Is(err, agentledger.ErrNotFound) {
		return "", nil // its task was deleted: nothing to ask or tell
	}
	if err != nil {
		return "", err
	}
	m := Message(r, c.Channel)
	a := ledger.Attempt{Tenant: c.Tenant, TaskID: c.TaskID, Generation: c.Generation, Fence: c.Fence()}
	step := "notify/" + c.Rule
	if c.Event.Event == EventAsk {
		_, err := d.post(ctx, a, step, c.Channel, r, m)
		return "", err
	}
	last, found, err := d.Ledger.LastCompleted(ctx, c.TaskID, c.Generation, notify.OpPost, step)
	if err != nil || !found {
		return "", err // never posted (its post failed for good): nothing to edit
	}
	if c.Event.Event == EventOutcome {
		m.Fields = append(m.Fields, notify.Field{Label: "Outcome", Value: p.Outcome})
		return notify.PostedChannel(last.Result), d.update(ctx, a, step+"/outcome", last.Result.ExternalRef, m)
	}
	return notify.PostedChannel(last.Result), d.update(ctx, a, step+"/decided", last.Result.ExternalRef, m)
}

// post is the reconcilable effect that posts r's message at step; its
// identity is the request and the channel.
func (d *Deliverer) post(ctx context.Context, a ledger.Attempt, step, channel string, r approvals.Request, m notify.Message) (ledger.Result, error) {
	req, err := canonjson.MarshalValue(map[string]any{"approval": r.ID, "channel": channel})
	if err != nil {
		return ledger.Result{}, agentledger.Permanent(err)
	}
	return d.Ledger.Do(ctx, a, ledger.Effect{
		Operation: notify.OpPost, StepPath: step, Class: ledger.Reconcilable, Request: req,
		Perform: func(ctx context.Context, call ledger.Call) (ledger.Result, error) {
			key := call.DownstreamKey("notify")
			var ref string
			var err error
			switch bs, ok := d.Sink.(ButtonSink); {
			case ok && r.State == approvals.Pending:
				ref, err = bs.PostButtons(ctx, key, m, BlockID, Buttons(r))
			case r.State == approvals.Pending:
				m.Text += consoleButtons
				ref, err = d.Sink.Post(ctx, key, m)
			default:
				ref, err = d.Sink.Post(ctx, key, m)
			}
			if err != nil {
				return ledger.Result{}, err
			}
			return notify.Posted(channel, ref), nil
		},
		Reconcile: func(ctx context.Context, call ledger.Call) (ledger.Result, bool, error) {
			ref, found, err := d.Sink.Find(ctx, call.DownstreamKey("notify"), m, call.ReservedAt)
			if err != nil || !found {
				return ledger.Result{}, false, err
			}
			return notify.Posted(channel, ref), true, nil
		},
	})
}

// update is the keyed effect that edits the post ref to m, its buttons
// gone. A message Slack can no longer edit is left as it is.
func (d *Deliverer) update(ctx context.Context, a ledger.Attempt, step, ref string, m notify.Message) error {
	req, err := canonjson.MarshalValue(map[string]string{"ref": ref})
	if err != nil {
		return agentledger.Permanent(err)
	}
	_, err = d.Ledger.Do(ctx, a, ledger.Effect{
		Operation: notify.OpUpdate, StepPath: step, Class: ledger.Keyed, Request: req,
		Perform: func(ctx context.Context, _ ledger.Call) (ledger.Result, error) {
			err := d.Sink.Update(ctx, ref, m) // blocks replaced: the buttons go
			if errors.Is(err, notify.ErrMessageGone) {
				return ledger.Result{Body: json.RawMessage(`{"gone":true}`), ExternalRef: ref}, nil
			}
			if err != nil {
				return ledger.Result{}, err
			}
			return ledger.Result{Body: json.RawMessage(`{"updated":true}`), ExternalRef: ref}, nil
		},
	})
	return err
}
