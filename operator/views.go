package operator

import (
	"encoding/json"
	"time"

	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/notify/outbox"
	"github.com/agentledger/agentledger/saga"
)

// Effect is one effect of a task's journal as operators read it (agentctl
// show prints it as JSON, the console as a row).
type Effect struct {
	Step        string          `json:"step"`
	Operation   string          `json:"operation"`
	Class       ledger.Class    `json:"class"`
	Key         string          `json:"key"`
	State       ledger.State    `json:"state"`
	Performed   int32           `json:"performed"`
	Status      int             `json:"status,omitempty"`
	Result      json.RawMessage `json:"result,omitempty"`
	ExternalRef string          `json:"external_ref,omitempty"`
	Error       string          `json:"error,omitempty"`
	Note        string          `json:"note,omitempty"`
	// Undoes is, for a compensation, the step of the effect it undoes.
	Undoes string `json:"undoes,omitempty"`
	// Undoable says it declared a compensation that a compensation phase
	// would run (saga.ToUndo): what makes a task's undo worth offering.
	Undoable bool `json:"undoable,omitempty"`
	// OwnerToken is the fencing token of the attempt that reserved it.
	OwnerToken int64 `json:"-"`
}

// EffectOf is a ledger entry as operators read it.
func EffectOf(e ledger.Entry) Effect {
	undoes, _ := saga.Undoes(e.StepPath)
	return Effect{Step: e.StepPath, Operation: e.Operation, Class: e.Class, Key: e.Key, State: e.State,
		Performed: e.Performed, Status: e.Result.Status, Result: e.Result.Body, ExternalRef: e.Result.ExternalRef,
		Error: e.Error, Note: e.Note, Undoes: undoes, Undoable: saga.ToUndo(e), OwnerToken: e.OwnerToken}
}

func effectsOf(es []ledger.Entry) []Effect {
	out := make([]Effect, len(es))
	for i, e := range es {
		out[i] = EffectOf(e)
	}
	return out
}

// Notification is one of a task's notification events as operators read
// it.
type Notification struct {
	ID         int64  `json:"id"`
	Generation int32  `json:"generation"`
	Attempt    int32  `json:"attempt"`
	Event      string `json:"event"`
	// Rule is the rule that asked for the event; Step the notify tool's
	// step, for a message.
	Rule      string          `json:"rule,omitempty"`
	Step      string          `json:"step,omitempty"`
	Channel   string          `json:"channel"`
	State     outbox.State    `json:"state"`
	Failures  int32           `json:"failures"`
	LastError string          `json:"last_error,omitempty"`
	Payload   json.RawMessage `json:"payload,omitempty"`
	// UpdateOnly: a state its rule does not ask for, which edits the
	// rule's message of the task and posts none (outbox.Payload).
	UpdateOnly  bool       `json:"update_only,omitempty"`
	CreatedAt   time.Time  `json:"created_at"`
	DeliveredAt *time.Time `json:"delivered_at,omitempty"`
}

func notificationsOf(es []outbox.Event) []Notification {
	out := make([]Notification, len(es))
	for i, e := range es {
		p, _ := e.Decode() // the outbox's own JSON; a payload that does not decode edits nothing
		out[i] = Notification{ID: e.ID, Generation: e.Generation, Attempt: e.Attempt, Event: e.Event, Rule: e.Rule,
			Step: e.StepPath, Channel: e.Channel, State: e.State, Failures: e.Failures, LastError: e.LastError,
			Payload: e.Payload, UpdateOnly: p.UpdateOnly, CreatedAt: e.CreatedAt, DeliveredAt: e.DeliveredAt}
	}
	return out
}
