package notify

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentledger/agentledger/canonjson"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/notify/outbox"
)

// Redelivery: once an operator has fixed what failed a notification (the
// token, the channel, the app's membership), its event is delivered again
// (outbox.Store.Requeue) under the same ledger keys as before, so there is
// still one message per (task generation, rule). The effects that failed
// are reopened (Reopen): a post is looked up in the channel before it is
// made again, so one that landed after all is adopted, not repeated, and a
// message already posted is updated in place.

// Effect names one ledger effect of a notification.
type Effect struct {
	Operation string
	StepPath  string
}

// EffectsOf are the ledger effects that delivering e may record: for a
// notify tool message, its post at its step; for a rule's event, the post
// of the (task generation, rule) message, and e's own update of it or,
// when the message was gone, its new post.
func EffectsOf(e outbox.Event) []Effect {
	if e.Event == outbox.EventMessage {
		return []Effect{{OpPost, e.StepPath}}
	}
	step := ruleStep(e.Rule)
	again := fmt.Sprintf("%s/%d", step, e.ID)
	return []Effect{{OpPost, step}, {OpUpdate, again}, {OpPost, again}}
}

// ruleStep is the step of a rule's message.
func ruleStep(rule string) string { return "notify/" + rule }

// Reopen reopens the failed effects of e (ledger.Reopen) with note, so
// that delivering e again performs them, and returns how many it
// reopened. Run it in the transaction that requeues e.
func Reopen(ctx context.Context, l *ledger.Ledger, e outbox.Event, note string) (int, error) {
	n := 0
	for _, eff := range EffectsOf(e) {
		key := ledger.EffectKey(e.Tenant, e.TaskID, e.Generation, eff.StepPath, eff.Operation)
		ok, err := l.Reopen(ctx, e.Tenant, eff.Operation, key, note)
		if err != nil {
			return n, err
		}
		if ok {
			n++
		}
	}
	return n, nil
}

// Moves says whether e, a rule's event requeued by a redelivery, goes to
// channel — its rule's channel now — rather than to the channel it was
// written for. Only while nothing of the rule's message of e's task
// generation can stand in the old channel: journal (that generation's
// effects) holds no post of it but ones sent once and refused (failed
// after one performance: the channel answered, and nothing was posted; a
// post taken over from a dispatcher that stopped mid-send may land late,
// so a second performance keeps it). A post of unknown outcome, or one
// that landed, keeps every event of the message where it is; so does a
// notify tool's message, whose channel is the task's own. The caller also
// keeps a message whose other events are still to be delivered: one of
// them may be posting it.
func Moves(e outbox.Event, journal []ledger.Entry, channel string) bool {
	if e.Event == outbox.EventMessage || channel == "" || channel == e.Channel {
		return false
	}
	step := ruleStep(e.Rule)
	for _, j := range journal {
		mine := j.StepPath == step || strings.HasPrefix(j.StepPath, step+"/")
		if mine && j.Operation == OpPost && (j.State != ledger.StateFailed || j.Performed > 1) {
			return false
		}
	}
	return true
}

// ReopenMoved is Reopen for an event that Moves to channel: the refused
// post of its rule's message is reopened with the request of a post to
// channel (ledger.ReopenAs), the rest as Reopen does. Run it in the
// transaction that requeues e and moves it.
func ReopenMoved(ctx context.Context, l *ledger.Ledger, e outbox.Event, channel, note string) (int, error) {
	step := ruleStep(e.Rule)
	req, err := canonjson.MarshalValue(rulePost(e.Rule, channel))
	if err != nil {
		return 0, err
	}
	moved, err := l.ReopenAs(ctx, e.Tenant, OpPost, ledger.EffectKey(e.Tenant, e.TaskID, e.Generation, step, OpPost), req, note)
	if err != nil {
		return 0, err
	}
	n, err := Reopen(ctx, l, e, note)
	if moved {
		n++
	}
	return n, err
}

// What delivering an event again sends (Plan.Action).
const (
	// SendPost posts a new message.
	SendPost = "post"
	// SendUpdate updates the message Plan.Ref in place.
	SendUpdate = "update"
	// SendNothing: the message was posted (Plan.Ref), or there is none to
	// update and the event's state posts none; nothing is sent.
	SendNothing = "nothing"
)

// Plan is what delivering a failed event again would send.
type Plan struct {
	Action string `json:"action"`
	// Ref is the message updated, or already posted; empty for an update
	// of the message that an earlier notification of the same task
	// generation and rule, delivered again just before, posts.
	Ref string `json:"ref,omitempty"`
	// LookFirst: an earlier attempt may have posted it, so the channel's
	// history is searched before posting, and a post found is adopted.
	LookFirst bool `json:"look_first,omitempty"`
	// MovedFrom is the channel the event was written for, which refused
	// its rule's post: it goes to the channel its rule names now (Moves).
	MovedFrom string `json:"moved_from,omitempty"`
}

// String says in words what the plan sends, for operators.
func (p Plan) String() string {
	if p.MovedFrom != "" {
		return Plan{Action: p.Action, Ref: p.Ref, LookFirst: p.LookFirst}.String() +
			" (its rule's channel now; the post failed in " + p.MovedFrom + ")"
	}
	switch {
	case p.Action == SendPost && p.LookFirst:
		return "look up first, then post"
	case p.Action == SendUpdate && p.Ref == "":
		return "update the message posted just before"
	case p.Action == SendUpdate:
		return "update " + p.Ref
	case p.Action == SendNothing && p.Ref == "":
		return "nothing: its rule's message was never posted, and this state posts none (redeliver the post with it)"
	case p.Action == SendNothing:
		return "nothing: posted as " + p.Ref
	}
	return p.Action
}

// PlanOf says what delivering e again would send, read from journal, the
// ledger's effects of e's task generation.
func PlanOf(e outbox.Event, journal []ledger.Entry) Plan {
	step := e.StepPath
	if e.Event != outbox.EventMessage {
		step = ruleStep(e.Rule)
	}
	var posted *ledger.Entry // the newest completed post of the message
	tried := false           // a post that may have landed
	for i := range journal {
		j := &journal[i]
		if j.Operation != OpPost {
			continue
		}
		mine := j.StepPath == step || e.Event != outbox.EventMessage && strings.HasPrefix(j.StepPath, step+"/")
		switch {
		case !mine:
		case j.State == ledger.StateCompleted:
			posted = j
		case j.StepPath == step:
			tried = true
		}
	}
	switch {
	case posted != nil && e.Event == outbox.EventMessage:
		return Plan{Action: SendNothing, Ref: posted.Result.ExternalRef}
	case posted != nil:
		return Plan{Action: SendUpdate, Ref: posted.Result.ExternalRef}
	}
	if p, err := e.Decode(); err == nil && p.UpdateOnly {
		return Plan{Action: SendNothing}
	}
	return Plan{Action: SendPost, LookFirst: tried}
}
