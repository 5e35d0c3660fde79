package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/canonjson"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/notify/outbox"
)

// The ledger operations of notifications.
const (
	OpPost   = "notify.post"
	OpUpdate = "notify.update"
)

// target scopes the downstream keys handed to sinks.
const target = "notify"

// Deliverer delivers outbox events to a sink through the ledger.
type Deliverer struct {
	ledger *ledger.Ledger
	sink   Sink
}

var _ outbox.Handler = (*Deliverer)(nil)

// NewDeliverer returns a Deliverer posting to sink.
func NewDeliverer(l *ledger.Ledger, sink Sink) *Deliverer { return &Deliverer{ledger: l, sink: sink} }

// Deliver posts or updates the message of c. Errors follow
// outbox.Handler: a permanent sink error (an unknown channel, a revoked
// token) is recorded as the effect's failure and gives the event up, as
// does a key presented with another request (a rule whose channel changed
// under a message).
func (n *Deliverer) Deliver(ctx context.Context, c outbox.Claimed) (string, error) {
	channel, err := n.deliver(ctx, c)
	if errors.Is(err, agentledger.ErrKeyReuse) {
		return "", agentledger.Permanent(err)
	}
	return channel, err
}

// deliver returns the channel of the message it edited in place (see
// outbox.Handler), "" when it posted to c.Channel.
func (n *Deliverer) deliver(ctx context.Context, c outbox.Claimed) (string, error) {
	p, err := c.Decode()
	if err != nil {
		return "", agentledger.Permanent(fmt.Errorf("event %d: payload: %w", c.ID, err))
	}
	a := ledger.Attempt{Tenant: c.Tenant, TaskID: c.TaskID, Generation: c.Generation, Fence: c.Fence()}
	if c.Event.Event == outbox.EventMessage {
		m := Message{Channel: c.Channel, Text: p.Text}
		_, err := n.post(ctx, a, c.StepPath, map[string]string{"channel": c.Channel, "text": p.Text}, m)
		return "", err
	}
	m := Render(c.Event, p)
	step := ruleStep(c.Rule)
	last, found, err := n.ledger.LastCompleted(ctx, c.TaskID, c.Generation, OpPost, step)
	if err != nil {
		return "", err
	}
	if !found {
		if p.UpdateOnly {
			// The events of a task and rule are delivered in order: the
			// post before this was given up. Given up too, this is sent
			// again after it by a redelivery, rather than leaving the
			// redelivered post to say a state the task has left.
			return "", agentledger.Permanent(fmt.Errorf("event %d: no message to edit: the rule's post of task %d was given up "+
				"(a redelivery of the task's notifications posts it, then edits it)", c.ID, c.TaskID))
		}
		_, err := n.post(ctx, a, step, rulePost(c.Rule, c.Channel), m)
		return "", err
	}
	again := fmt.Sprintf("%s/%d", step, c.ID)
	if last.StepPath == again {
		// This event's own repost (its message was gone), completed by a
		// delivery that lost its claim before marking the event: done.
		return "", nil
	}
	gone, err := n.update(ctx, a, again, last.Result.ExternalRef, m)
	if err != nil || !gone {
		return PostedChannel(last.Result), err
	}
	_, err = n.post(ctx, a, again, map[string]any{"rule": c.Rule, "channel": c.Channel, "replaces": last.Result.ExternalRef}, m)
	return "", err
}

// rulePost is the request of a rule's first post of a task generation's
// message, its identity in the ledger: the rule and the channel.
func rulePost(rule, channel string) map[string]string {
	return map[string]string{"rule": rule, "channel": channel}
}

// post is the reconcilable effect that posts m at step. request is the
// effect's identity, which must not change between deliveries: the rule
// and channel, not the content, which changes with each event.
func (n *Deliverer) post(ctx context.Context, a ledger.Attempt, step string, request any, m Message) (ledger.Result, error) {
	req, err := canonjson.MarshalValue(request)
	if err != nil {
		return ledger.Result{}, agentledger.Permanent(err)
	}
	return n.ledger.Do(ctx, a, ledger.Effect{
		Operation: OpPost, StepPath: step, Class: ledger.Reconcilable, Request: req,
		Perform: func(ctx context.Context, call ledger.Call) (ledger.Result, error) {
			ref, err := n.sink.Post(ctx, call.DownstreamKey(target), m)
			if err != nil {
				return ledger.Result{}, err
			}
			return Posted(m.Channel, ref), nil
		},
		Reconcile: func(ctx context.Context, call ledger.Call) (ledger.Result, bool, error) {
			ref, found, err := n.sink.Find(ctx, call.DownstreamKey(target), m, call.ReservedAt)
			if err != nil || !found {
				return ledger.Result{}, false, err
			}
			return Posted(m.Channel, ref), true, nil
		},
	})
}

// update is the keyed effect that replaces the content of the message ref;
// gone reports that the sink can no longer update it.
func (n *Deliverer) update(ctx context.Context, a ledger.Attempt, step, ref string, m Message) (gone bool, err error) {
	req, err := canonjson.MarshalValue(map[string]string{"ref": ref})
	if err != nil {
		return false, agentledger.Permanent(err)
	}
	res, err := n.ledger.Do(ctx, a, ledger.Effect{
		Operation: OpUpdate, StepPath: step, Class: ledger.Keyed, Request: req,
		Perform: func(ctx context.Context, _ ledger.Call) (ledger.Result, error) {
			err := n.sink.Update(ctx, ref, m)
			if errors.Is(err, ErrMessageGone) {
				return ledger.Result{Body: json.RawMessage(`{"gone":true}`), ExternalRef: ref}, nil
			}
			if err != nil {
				return ledger.Result{}, err
			}
			return ledger.Result{Body: json.RawMessage(`{"updated":true}`), ExternalRef: ref}, nil
		},
	})
	if err != nil {
		return false, err
	}
	var out struct{ Gone bool }
	_ = json.Unmarshal(res.Body, &out) // stored by this package: an object
	return out.Gone, nil
}

// Posted is the stored result of a post of ref to channel.
func Posted(channel, ref string) ledger.Result {
	body, _ := json.Marshal(map[string]string{"channel": channel, "ref": ref}) // strings always encode
	return ledger.Result{Body: body, ExternalRef: ref}
}

// PostedChannel is the channel of a post's stored result (Posted); "" if
// it names none.
func PostedChannel(r ledger.Result) string {
	var p struct {
		Channel string `json:"channel"`
	}
	_ = json.Unmarshal(r.Body, &p) // a result of Posted, or "" for any other
	return p.Channel
}
