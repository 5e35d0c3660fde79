package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/canonjson"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/ledger"
)

// CreateTask is the create_task tool: it enqueues a child task in the
// calling task's tenant, in the same transaction as its ledger row, so the
// child exists exactly once however often the call is replayed.
type CreateTask struct{}

// NewCreateTask returns the create_task tool.
func NewCreateTask() *CreateTask { return &CreateTask{} }

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
// runs now and keeps to the calling tenant's priority floor (Bound),
// whoever submitted the parent; the ledger request holds the priority as
// asked, so a replay under a changed floor is the same call.
func (c *CreateTask) Effect(call Call) (ledger.Effect, error) {
	if call.Task == nil {
		return ledger.Effect{}, agentledger.Permanent(errors.New("create_task: no calling task"))
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
	Bound(call.Grant, &p)
	return ledger.Effect{
		Operation: "task.create", StepPath: call.StepPath, Class: ledger.Local, Request: request,
		PerformLocal: func(ctx context.Context, lc ledger.Call, db ledger.DB) (ledger.Result, error) {
			child := p
			child.SubmissionKey = "child:" + lc.Key
			r, err := claims.New(db).Enqueue(ctx, child)
			if err != nil {
				if errors.Is(err, agentledger.ErrInvalid) {
					err = agentledger.Permanent(err)
				}
				return ledger.Result{}, fmt.Errorf("create_task: %w", err)
			}
			id := strconv.FormatInt(r.Task.ID, 10)
			return ledger.Result{Body: json.RawMessage(`{"task_id":` + id + `}`), ExternalRef: "task:" + id}, nil
		},
	}, nil
}

// Bound keeps p, a task queued for the tenant whose grant is g — through
// the API, or as the child of one of its tasks — from jumping ahead of the
// tasks already waiting: a priority more urgent than g's floor is raised
// to it, and a run_at in the past (only the API takes one) becomes now
// (zero: the database's clock). A nil g (nothing checked) bounds run_at
// only.
func Bound(g *grants.Grant, p *claims.EnqueueParams) {
	if g != nil {
		p.Priority = max(p.Priority, g.PriorityFloor)
	}
	if !p.RunAt.After(time.Now()) {
		p.RunAt = time.Time{}
	}
}
