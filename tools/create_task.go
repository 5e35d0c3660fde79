package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/canonjson"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/ledger"
)

// CreateTask is the create_task tool: it enqueues a child task in the
// calling task's tenant, in the same transaction as its ledger row, so the
// child exists exactly once however often the call is replayed.
type CreateTask struct{ door ChildDoor }

// ChildDoor admits and queues a child task: package admit's door, with
// the parent task as its caller. admit imports this package, so the door
// comes in from whoever assembles the tools (the daemon).
type ChildDoor interface {
	// EnqueueChild queues p, a child of a task whose tenant's grant is g
	// (nil: none checked), through db (the ledger row's transaction).
	EnqueueChild(ctx context.Context, db claims.DB, g *grants.Grant, p claims.EnqueueParams) (claims.EnqueueResult, error)
}

// NewCreateTask returns the create_task tool, queuing through door.
func NewCreateTask(door ChildDoor) *CreateTask { return &CreateTask{door: door} }

// Reach is the child's kind, for the tenant's grant.
func (CreateTask) Reach(call Call) (grants.Need, error) {
	var a struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(call.Args, &a); err != nil {
		return grants.Need{}, agentledger.Permanent(fmt.Errorf("create_task: arguments: %v", err))
	}
	return grants.Need{Kind: a.Kind}, nil
}

// Name is "create_task".
func (*CreateTask) Name() string { return "create_task" }

// Description tells the model what the tool does.
func (*CreateTask) Description() string {
	return "Create a child task of the given kind, with an optional queue, JSON payload and priority " +
		"(0-100, lower runs first). Returns its task_id."
}

// Parameters is the JSON Schema of the arguments. Like Description, it is
// part of every agent completion's ledger request that lists this tool, so
// changing either breaks the replays of conversations recorded before
// (create_task_spec_test.go pins both).
func (*CreateTask) Parameters() json.RawMessage {
	return json.RawMessage(`{"type":"object","additionalProperties":false,"required":["kind"],"properties":{` +
		`"kind":{"type":"string","pattern":"^[A-Za-z0-9._:-]{1,128}$"},` +
		`"queue":{"type":"string","pattern":"^[A-Za-z0-9._:-]{0,128}$"},` +
		`"payload":{"description":"the child's JSON payload; default {}"},` +
		`"priority":{"type":"integer","minimum":0,"maximum":100}}}`)
}

// createArgs are the tool's arguments.
type createArgs struct {
	Kind     string          `json:"kind"`
	Queue    string          `json:"queue,omitempty"`
	Payload  json.RawMessage `json:"payload,omitempty"`
	Priority int16           `json:"priority,omitempty"`
}

// Effect validates the arguments and returns a local effect, operation
// "task.create". The child's submission key is "child:" + the effect key,
// so even a second insert would be a duplicate of the first. The child
// passes the door as any task does (for a parent: its grant, priority
// floor, typed kind and steps checks), whoever submitted the parent; the
// ledger request holds the priority as asked, so a replay under a changed
// floor is the same call. A refusal is permanent.
func (c *CreateTask) Effect(call Call) (ledger.Effect, error) {
	if call.Task == nil {
		return ledger.Effect{}, agentledger.Permanent(errors.New("create_task: no calling task"))
	}
	if c.door == nil {
		return ledger.Effect{}, agentledger.Permanent(errors.New("create_task: no door to queue through (NewCreateTask)"))
	}
	var a createArgs
	dec := json.NewDecoder(bytes.NewReader(call.Args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return ledger.Effect{}, agentledger.Permanent(fmt.Errorf(
			"create_task: arguments must be {\"kind\", \"queue\"?, \"payload\"?, \"priority\"?}: %v", err))
	}
	p := claims.EnqueueParams{Tenant: call.Task.Tenant, Kind: a.Kind, Queue: a.Queue, Payload: a.Payload, Priority: a.Priority}
	if string(p.Payload) == "null" {
		p.Payload = nil
	}
	if err := p.Validate(); err != nil {
		return ledger.Effect{}, agentledger.Permanent(fmt.Errorf("create_task: %w", err))
	}
	request, err := canonjson.MarshalValue(map[string]any{
		"kind": p.Kind, "queue": p.Queue, "payload": p.Payload, "priority": p.Priority})
	if err != nil {
		return ledger.Effect{}, agentledger.Permanent(fmt.Errorf("create_task: payload: %v", err))
	}
	return ledger.Effect{
		Operation: "task.create", StepPath: call.StepPath, Class: ledger.Local, Request: request,
		PerformLocal: func(ctx context.Context, lc ledger.Call, db ledger.DB) (ledger.Result, error) {
			child := p
			child.SubmissionKey = "child:" + lc.Key
			r, err := c.door.EnqueueChild(ctx, db, call.Grant, child)
			if err != nil {
				if errors.Is(err, agentledger.ErrInvalid) || errors.Is(err, agentledger.ErrForbidden) {
					err = agentledger.Permanent(err)
				}
				return ledger.Result{}, fmt.Errorf("create_task: %w", err)
			}
			// The child knows its parent: its end wakes a parent waiting
			// for it (wait_for_children), a parent's cancel reaches it.
			if _, err := db.Exec(ctx, `/* tools.create_task.parent */ UPDATE tasks SET parent_id = $2, parent_generation = $3
				WHERE id = $1 AND parent_id IS NULL`, r.Task.ID, call.Task.ID, call.Task.Generation); err != nil {
				return ledger.Result{}, fmt.Errorf("create_task: linking child %d to its parent: %w", r.Task.ID, err)
			}
			id := strconv.FormatInt(r.Task.ID, 10)
			return ledger.Result{Body: json.RawMessage(`{"task_id":` + id + `}`), ExternalRef: "task:" + id}, nil
		},
	}, nil
}
