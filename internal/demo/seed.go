package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/admit"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/notify/outbox"
	"github.com/agentledger/agentledger/schedule"
)

// DB is what the demo needs of a database: a pool, a connection or a
// transaction (pgx's own types satisfy it).
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Seeded is what Seed made or found.
type Seeded struct {
	// Tasks are the demo tasks by name, in the order they were seeded.
	Tasks []SeededTask
	// Rule and Schedule name the notification rule and the cron schedule.
	Rule, Schedule string
	// RuleDisabled and SchedulePaused say an operator disabled the rule or
	// paused the schedule since an earlier run added them.
	RuleDisabled, SchedulePaused bool
}

// SeededTask is one demo task.
type SeededTask struct {
	Name string
	ID   int64
	// New is false when an earlier run had seeded it.
	New bool
	// State is the task's state when Seed ran.
	State agentledger.TaskState
}

// The demo's names.
const (
	RuleName     = "demo"
	ScheduleName = "demo-heartbeat"
	Channel      = "demo"
)

// Seed seeds the workload against the demo API at base (e.g.
// "http://127.0.0.1:7450"). It is idempotent: tasks carry submission keys,
// and the rule and schedule are added once (changed since, they stay as
// changed).
func Seed(ctx context.Context, db DB, base string) (Seeded, error) {
	out := Seeded{Rule: RuleName, Schedule: ScheduleName}
	// Added once: an operator's changes since (a rule disabled, a
	// schedule paused) stand, and the banner says so.
	rules := outbox.NewRules(db)
	_, err := rules.Put(ctx, outbox.Rule{Name: RuleName, Channel: Channel, Events: outbox.Events}, false)
	if errors.Is(err, agentledger.ErrConflict) {
		var all []outbox.Rule
		if all, err = rules.List(ctx); err == nil {
			for _, r := range all {
				out.RuleDisabled = out.RuleDisabled || (r.Name == RuleName && r.Disabled)
			}
		}
	}
	if err != nil {
		return out, err
	}
	sched := schedule.NewStore(db)
	_, err = sched.Add(ctx, schedule.Schedule{Name: ScheduleName, Spec: "@every 1m", Kind: "echo",
		Payload: json.RawMessage(`{"heartbeat":"demo"}`)})
	if errors.Is(err, agentledger.ErrConflict) {
		var s schedule.Schedule
		if s, err = sched.Get(ctx, ScheduleName); err == nil {
			out.SchedulePaused = s.Paused
		}
	}
	if err != nil {
		return out, err
	}
	store, door := claims.New(db), &admit.Door{}
	for _, t := range tasks(base) {
		payload, err := json.Marshal(map[string]any{"steps": t.steps})
		if err != nil {
			return out, err
		}
		// The operator's, queued whether or not the demo's worker is up yet.
		r, err := door.Enqueue(ctx, db, admit.Submission{Caller: admit.Operator, Unserved: true,
			Params: claims.EnqueueParams{Kind: "steps", Payload: payload, SubmissionKey: "demo:" + t.name, MaxAttempts: 5}})
		if errors.Is(err, agentledger.ErrKeyReuse) {
			// Seeded by an earlier run listening elsewhere (its URLs
			// differ): the demo task exists.
			old, gerr := store.GetByKey(ctx, agentledger.OperatorTenant, "demo:"+t.name)
			if gerr != nil {
				return out, fmt.Errorf("demo task %s: %w", t.name, gerr)
			}
			out.Tasks = append(out.Tasks, SeededTask{Name: t.name, ID: old.ID, State: old.State})
			continue
		}
		if err != nil {
			return out, fmt.Errorf("demo task %s: %w", t.name, err)
		}
		out.Tasks = append(out.Tasks, SeededTask{Name: t.name, ID: r.Task.ID, New: !r.Duplicate, State: r.Task.State})
	}
	return out, nil
}

type step = map[string]any

type demoTask struct {
	name  string
	steps []step
}

// tasks are the demo's steps tasks.
func tasks(base string) []demoTask {
	return []demoTask{
		{"charge-order-1001", []step{
			{"tool": "http_request", "args": step{"method": "POST", "url": base + "/demo/charges", "body": step{"order": 1001, "amount": 4200}}},
			{"tool": "create_task", "args": step{"kind": "echo", "payload": step{"receipt_for": "${steps.0.body.id}"}}},
			{"tool": "notify", "args": step{"channel": Channel, "text": "charged order 1001: ${steps.0.body.id}"}},
		}},
		{"charge-order-1002-flaky", []step{
			{"tool": "http_request", "args": step{"method": "POST", "url": base + "/demo/flaky", "body": step{"order": 1002, "amount": 990}}},
			{"tool": "notify", "args": step{"channel": Channel, "text": "charged order 1002 after retries: ${steps.0.body.id}"}},
		}},
		{"legacy-inventory-sync", []step{
			{"tool": "unsafe_http", "args": step{"method": "POST", "url": base + "/demo/legacy", "body": step{"sync": "inventory"}}},
		}},
		{SagaTask, sagaSteps(base, 1003)},
		{ApprovalTask, []step{
			{"tool": "http_request", "args": step{"method": "POST", "url": base + "/demo/charges", "body": step{"order": 1004, "amount": 250000}},
				"approve": step{"timeout": "24h"}},
			{"tool": "notify", "args": step{"channel": Channel, "text": "charged order 1004 once approved: ${steps.0.body.id}"}},
		}},
	}
}

// ApprovalTask names the demo's gated charge: order 1004 is large, so its
// charge waits for a person's approval (package approvals) — from
// agentctl approve, the console, the API or Slack.
const ApprovalTask = "charge-order-1004-approval"

// SagaTask names the demo's saga: order 1003 is charged and its stock
// reserved, then the courier refuses the shipment, so the task ends dead
// and undoes the reservation, then the charge (compensating, then
// compensated).
const SagaTask = "ship-order-1003-saga"

// sagaSteps charges an order and reserves its stock, each with the call
// that undoes it, then ships it (which the demo API refuses).
func sagaSteps(base string, order int) []step {
	return []step{
		{"tool": "http_request", "args": step{"method": "POST", "url": base + "/demo/charges", "body": step{"order": order, "amount": 2500}},
			"compensate": step{"tool": "http_request", "args": step{"method": "POST", "url": base + "/demo/charges/${self.body.id}/refund",
				"body": step{"reason": fmt.Sprintf("order %d not shipped", order)}}}},
		{"tool": "http_request", "args": step{"method": "POST", "url": base + "/demo/reservations", "body": step{"order": order, "sku": "kettle", "qty": 1}},
			"compensate": step{"tool": "http_request", "args": step{"method": "POST", "url": base + "/demo/reservations/${self.body.id}/release"}}},
		{"tool": "http_request", "args": step{"method": "POST", "url": base + "/demo/shipments", "body": step{"order": order}}},
	}
}
