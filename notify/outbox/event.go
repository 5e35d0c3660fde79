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
