package operator

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/notify"
	"github.com/agentledger/agentledger/notify/outbox"
)

// RedeliverParams choose the failed notifications to deliver again: those
// of one task (TaskID), or with All those of every task; of Tenant's tasks
// only, unless Tenant is "" (the operator's own tools); the oldest Limit
// (default and at most outbox.MaxFailedBatch).
type RedeliverParams = outbox.FailedFilter

// PlannedNotification is a failed notification and what delivering it
// again sends.
type PlannedNotification struct {
	TaskID int64 `json:"task_id"`
	Notification
	Plan notify.Plan `json:"plan"`
}

// Redelivery is what a redelivery sends, or would send: the failed
// notifications, oldest first, each with its plan.
type Redelivery struct {
	Notifications []PlannedNotification `json:"notifications"`
	// Reopened counts the failed ledger effects made pending again (0 in
	// a preview).
	Reopened int `json:"reopened"`
}

// PreviewRedelivery says what Redeliver would send now, and changes
// nothing. A task that does not exist (or is another tenant's) is not
// found; one with no failed notification answers an empty list.
func (s *Service) PreviewRedelivery(ctx context.Context, p RedeliverParams) (*Redelivery, error) {
	if err := s.checkTask(ctx, p); err != nil {
		return nil, err
	}
	events, err := s.outbox.FailedEvents(ctx, p)
	if err != nil {
		return nil, err
	}
	return planRedelivery(ctx, s.ledger, events)
}

// Redeliver delivers the failed notifications of p again, once their
// cause is fixed: in one transaction, their events become pending (due
// now, failures forgotten) and the ledger effects that failed are
// reopened, so the dispatchers deliver them under the same keys as
// before. There is still one message per (task generation, rule): a post
// is looked up in the channel before it is made again, and a message
// already posted is updated in place. It answers what it requeued, as it
// was (failed, and why), with the plan of each.
func (s *Service) Redeliver(ctx context.Context, p RedeliverParams) (*Redelivery, error) {
	if err := s.checkTask(ctx, p); err != nil {
		return nil, err
	}
	var out *Redelivery
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		box := outbox.NewStore(tx)
		box.Now = s.outbox.Now
		l := ledger.New(tx)
		before, err := box.FailedEvents(ctx, p)
		if err != nil {
			return err
		}
		events, err := box.Requeue(ctx, p)
		if err != nil {
			return err
		}
		was := map[int64]outbox.Event{}
		for _, e := range before {
			was[e.ID] = e
		}
		reopened := 0
		for i, e := range events {
			if old, ok := was[e.ID]; ok {
				events[i] = old // shown as it was: failed, and why
			}
			n, err := notify.Reopen(ctx, l, e, "redelivered by an operator")
			if err != nil {
				return err
			}
			reopened += n
		}
		if out, err = planRedelivery(ctx, l, events); err != nil {
			return err
		}
		out.Reopened = reopened
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// checkTask finds p's task, when it names one, so that an unknown task
// (or another tenant's) is not found rather than without failures.
func (s *Service) checkTask(ctx context.Context, p RedeliverParams) error {
	if p.All || p.TaskID <= 0 {
		return nil // FailedFilter's checks say what is wrong
	}
	_, err := s.tasks.Get(ctx, p.Tenant, p.TaskID)
	return err
}

// planRedelivery plans each event from its task generation's journal:
// of the events of one (task generation, rule), delivered in order, the
// first posts the message and the later ones update it.
func planRedelivery(ctx context.Context, l *ledger.Ledger, events []outbox.Event) (*Redelivery, error) {
	type gen struct {
		task int64
		gen  int32
	}
	type message struct {
		gen
		rule string
	}
	journals := map[gen][]ledger.Entry{}
	posting := map[message]bool{}
	out := &Redelivery{Notifications: []PlannedNotification{}}
	for i, e := range events {
		g := gen{e.TaskID, e.Generation}
		j, ok := journals[g]
		if !ok {
			var err error
			if j, err = l.Journal(ctx, e.TaskID, e.Generation); err != nil {
				return nil, fmt.Errorf("task %d: %w", e.TaskID, err)
			}
			journals[g] = j
		}
		plan := notify.PlanOf(e, j)
		if m := (message{g, e.Rule}); e.Event != outbox.EventMessage {
			if posting[m] {
				plan = notify.Plan{Action: notify.SendUpdate} // the message posted just before
			}
			posting[m] = posting[m] || plan.Action == notify.SendPost
		}
		out.Notifications = append(out.Notifications, PlannedNotification{TaskID: e.TaskID,
			Notification: notificationsOf(events[i : i+1])[0], Plan: plan})
	}
	return out, nil
}
