package outbox

import (
	"encoding/json"
	"time"
)

// EventMessage is the event of a notify tool call: a message to post as
// it is, at its step.
const EventMessage = "message"

// State is where an event stands.
type State string

// The event states.
const (
	StatePending   State = "pending"
	StateDelivered State = "delivered"
	StateFailed    State = "failed"
)

// Event is one outbox row.
type Event struct {
	ID         int64
	Tenant     string
	TaskID     int64
	Generation int32
	// Attempt is the task's attempt when the event was written.
	Attempt int32
	// Event is the task state that caused it, or EventMessage.
	Event string
	// Rule is the notification rule that asked for it; empty for a
	// message.
	Rule string
	// StepPath is a message's step; empty for a rule's event.
	StepPath string
	Channel  string
	// Payload is what the notification shows (see Payload).
	Payload     json.RawMessage
	State       State
	Failures    int32
	LastError   string
	CreatedAt   time.Time
	DeliveredAt *time.Time
}

// Payload is an event's content: the task as of the change, or a message's
// text.
type Payload struct {
	Kind        string `json:"kind,omitempty"`
	Queue       string `json:"queue,omitempty"`
	State       string `json:"state,omitempty"`
	Attempt     int32  `json:"attempt,omitempty"`
	MaxAttempts int32  `json:"max_attempts,omitempty"`
	Error       string `json:"error,omitempty"`
	Result      string `json:"result,omitempty"`
	Text        string `json:"text,omitempty"`
	// UpdateOnly marks a state the event's rule does not ask for: it edits
	// the message an earlier event of the rule posted for the task's
	// generation, and posts none but to replace a message Slack lost
	// (EventsCTE).
	UpdateOnly bool `json:"update_only,omitempty"`
}

// Decode reads the event's payload.
func (e *Event) Decode() (Payload, error) {
	var p Payload
	if len(e.Payload) == 0 {
		return p, nil
	}
	err := json.Unmarshal(e.Payload, &p)
	return p, err
}

// Claimed is an event a dispatcher holds: Token fences every write made
// for it until LeaseExpiresAt.
type Claimed struct {
	Event
	Token          int64
	LeaseExpiresAt time.Time
}

// ClaimFence is a dispatcher's claim of an event as a fence for the writes
// of its delivery (the ledger's): the event row holds while it carries the
// claim's token and the claim has not expired. It satisfies ledger.Fence.
type ClaimFence struct{ ID, Token int64 }

// Fence is c's claim as a fence.
func (c Claimed) Fence() ClaimFence { return ClaimFence{ID: c.ID, Token: c.Token} }

// FenceFrom selects the event row while the claim holds.
func (ClaimFence) FenceFrom(id, token string) string {
	return `outbox WHERE id = ` + id + ` AND lease_token = ` + token + ` AND lease_expires_at > now()`
}

// FenceID is the event's id.
func (f ClaimFence) FenceID() int64 { return f.ID }

// FenceToken is the claim's fencing token.
func (f ClaimFence) FenceToken() int64 { return f.Token }
