package operator

import (
	"context"
	"fmt"
	"slices"

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
	return planFor(ctx, s.db, s.outbox, s.ledger, events)
}

// planFor plans events (planRedelivery) against the rules' channels and
// the messages still being delivered, as db, box and l read them now.
func planFor(ctx context.Context, db outbox.DB, box *outbox.Store, l *ledger.Ledger, events []outbox.Event) (*Redelivery, error) {
	channels, err := ruleChannels(ctx, db)
	if err != nil {
		return nil, err
	}
	busy, err := busyMessages(ctx, box, events)
	if err != nil {
		return nil, err
	}
	return planRedelivery(ctx, l, events, channels, busy)
}

// message is one (task generation, rule) message.
type message struct {
	task int64
	gen  int32
	rule string
}

// busyMessages are the messages of events that have another event still to
// be delivered (pending: due, or claimed by a dispatcher) beside events
// themselves: such a message is not moved to another channel, as that
// event may be posting it in the old one as the redelivery commits.
func busyMessages(ctx context.Context, box *outbox.Store, events []outbox.Event) (map[message]bool, error) {
	mine := map[int64]bool{}
	tasks := map[int64]bool{}
	for _, e := range events {
		mine[e.ID] = true
		tasks[e.TaskID] = true
	}
	busy := map[message]bool{}
	for id := range tasks {
		all, err := box.ForTask(ctx, "", id)
		if err != nil {
			return nil, err
		}
		for _, o := range all {
			if o.Rule != "" && !mine[o.ID] && o.State == outbox.StatePending {
				busy[message{o.TaskID, o.Generation, o.Rule}] = true
			}
		}
	}
	return busy, nil
}

// ruleChannels maps each notification rule to its channel now.
func ruleChannels(ctx context.Context, db outbox.DB) (map[string]string, error) {
	rules, err := outbox.NewRules(db).List(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(rules))
	for _, r := range rules {
		out[r.Name] = r.Channel
	}
	return out, nil
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
		shown := slices.Clone(events)
		for i, e := range shown {
			if old, ok := was[e.ID]; ok {
				shown[i] = old // shown as it was: failed, and why
			}
		}
		// Planned before the ledger reopens anything: a post its channel
		// refused is told from one whose outcome is unknown.
		if out, err = planFor(ctx, tx, box, l, shown); err != nil {
			return err
		}
		const note = "redelivered by an operator"
		for i, e := range events {
			n := 0
			planned := &out.Notifications[i]
			moved := false
			if from := planned.Plan.MovedFrom; from != "" {
				if moved, err = box.Move(ctx, e.ID, planned.Channel); err != nil {
					return err
				}
				if !moved { // not pending as requeued: delivered where it was written for
					planned.Plan.MovedFrom, planned.Channel = "", from
				}
			}
			if moved {
				n, err = notify.ReopenMoved(ctx, l, e, planned.Channel, note+", to "+planned.Channel+" (the post failed in "+planned.Plan.MovedFrom+")")
			} else {
				n, err = notify.Reopen(ctx, l, e, note)
			}
			if err != nil {
				return err
			}
			out.Reopened += n
		}
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
func planRedelivery(ctx context.Context, l *ledger.Ledger, events []outbox.Event, channels map[string]string,
	busy map[message]bool) (*Redelivery, error) {
	type gen struct {
		task int64
		gen  int32
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
		n := notificationsOf(events[i : i+1])[0]
		m := message{e.TaskID, e.Generation, e.Rule}
		if to := channels[e.Rule]; !busy[m] && notify.Moves(e, j, to) {
			plan.MovedFrom, n.Channel = e.Channel, to
		}
		if e.Event != outbox.EventMessage {
			if posting[m] {
				plan = notify.Plan{Action: notify.SendUpdate, MovedFrom: plan.MovedFrom} // the message posted just before
			}
			posting[m] = posting[m] || plan.Action == notify.SendPost
		}
		out.Notifications = append(out.Notifications, PlannedNotification{TaskID: e.TaskID, Notification: n, Plan: plan})
	}
	return out, nil
}
