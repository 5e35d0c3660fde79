package tui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentledger/agentledger/operator"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/approvals"
	"github.com/agentledger/agentledger/waits"
)

// ioTimeout bounds every store call the console makes.
const ioTimeout = 15 * time.Second

// commands builds the console's tea.Cmds: every store call happens inside
// one of them, never in Update.
type commands struct {
	ctx   context.Context
	store Store
}

// call runs fn with a bounded context.
func (c commands) call(fn func(ctx context.Context) tea.Msg) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(c.ctx, ioTimeout)
		defer cancel()
		return fn(ctx)
	}
}

// tick fires a tickMsg after d, or nothing once the console's context ends.
func (c commands) tick(d time.Duration) tea.Cmd { return c.after(d, tickMsg{}) }

// expireStatus fires a statusExpiredMsg for status seq after d.
func (c commands) expireStatus(seq int, d time.Duration) tea.Cmd {
	return c.after(d, statusExpiredMsg{seq: seq})
}

// after delivers msg after d, or nothing once the console's context ends
// (tea.Tick's timer would outlive the console).
func (c commands) after(d time.Duration, msg tea.Msg) tea.Cmd {
	return func() tea.Msg {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-c.ctx.Done():
			return nil
		case <-t.C:
			return msg
		}
	}
}

func (c commands) page(seq int, f Filter, before int64, limit int) tea.Cmd {
	return c.call(func(ctx context.Context) tea.Msg {
		rows, err := c.store.List(ctx, f, before, limit)
		return pageMsg{seq: seq, rows: rows, err: err}
	})
}

func (c commands) counts(seq int, f Filter) tea.Cmd {
	return c.call(func(ctx context.Context) tea.Msg {
		n, err := c.store.Count(ctx, f)
		return countsMsg{seq: seq, counts: n, err: err}
	})
}

func (c commands) detail(id int64) tea.Cmd {
	return c.call(func(ctx context.Context) tea.Msg {
		d, err := c.store.Get(ctx, id)
		return detailMsg{id: id, detail: d, err: err}
	})
}

func (c commands) workers() tea.Cmd {
	return c.call(func(ctx context.Context) tea.Msg {
		w, err := c.store.Workers(ctx)
		return workersMsg{workers: w, err: err}
	})
}

func (c commands) shares() tea.Cmd {
	return c.call(func(ctx context.Context) tea.Msg {
		s, err := c.store.Shares(ctx)
		return sharesMsg{shares: s, err: err}
	})
}

// limits reads the limits, then their use and the breakers.
func (c commands) limits() tea.Cmd {
	return c.call(func(ctx context.Context) tea.Msg {
		l, err := c.store.Limits(ctx)
		if err != nil {
			return limitsMsg{err: err}
		}
		u, err := c.store.Usage(ctx)
		if err != nil {
			return limitsMsg{err: err}
		}
		b, now, err := c.store.Breakers(ctx)
		return limitsMsg{limits: l, usage: u, breakers: b, now: now, err: err}
	})
}

func (c commands) preview(id int64) tea.Cmd {
	return c.call(func(ctx context.Context) tea.Msg {
		p, err := c.store.ReplayPreview(ctx, id)
		return previewMsg{preview: p, err: err}
	})
}

func (c commands) compensationPreview(id int64) tea.Cmd {
	return c.call(func(ctx context.Context) tea.Msg {
		p, err := c.store.CompensationPreview(ctx, id)
		return compensationMsg{plan: p, err: err}
	})
}

func (c commands) redeliveryPreview(id int64) tea.Cmd {
	return c.call(func(ctx context.Context) tea.Msg {
		r, err := c.store.RedeliveryPreview(ctx, id)
		return redeliveryMsg{id: id, redelivery: r, err: err}
	})
}

// bulkCount counts the tasks a bulk action over f would touch.
func (c commands) bulkCount(op bulkOp, f Filter) tea.Cmd {
	return c.call(func(ctx context.Context) tea.Msg {
		counts, err := c.store.Count(ctx, Filter{Queue: f.Queue, Kind: f.Kind, Tenant: f.Tenant})
		var n int64
		for _, st := range bulkStates(op, f) {
			n += counts[st]
		}
		return bulkCountMsg{op: op, filter: f, n: n, err: err}
	})
}

// cancellable are the states cancel-all acts on: the unfinished ones but
// compensating, whose undoing a cancel does not stop. A waiting task is
// among them: cancelled, its request is withdrawn.
var cancellable = []agentledger.TaskState{agentledger.StateQueued, agentledger.StateWaiting,
	agentledger.StateRetrying, agentledger.StateRunning, agentledger.StateNeedsAttention}

// bulkStates are the states of the tasks a bulk action over f touches.
func bulkStates(op bulkOp, f Filter) []agentledger.TaskState {
	states := cancellable
	if op == bulkRetry {
		states = []agentledger.TaskState{agentledger.StateDead}
	}
	if f.State == "" {
		return states
	}
	for _, st := range states {
		if st == f.State {
			return []agentledger.TaskState{st}
		}
	}
	return nil
}

// act runs an action and reports it as an actionMsg.
func (c commands) act(fn func(ctx context.Context) (string, error)) tea.Cmd {
	return c.call(func(ctx context.Context) tea.Msg {
		text, err := fn(ctx)
		return actionMsg{text: text, err: err}
	})
}

func (c commands) replay(id int64) tea.Cmd {
	return c.act(func(ctx context.Context) (string, error) {
		t, err := c.store.Replay(ctx, id)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("task %d queued for replay (generation %d): the ledger serves completed effects", id, t.Generation), nil
	})
}

// rerunCheck reads what a re-run of t would be refused for.
func (c commands) rerunCheck(t *agentledger.Task) tea.Cmd {
	return c.call(func(ctx context.Context) tea.Msg {
		u, err := c.store.Unsettled(ctx, t.ID)
		return rerunCheckMsg{task: t, unsettled: u, err: err}
	})
}

func (c commands) rerun(id int64) tea.Cmd {
	return c.act(func(ctx context.Context) (string, error) {
		t, err := c.store.Rerun(ctx, id)
		var u *operator.UnsettledError
		if errors.As(err, &u) { // settled as unknown since the dialog opened
			return "", rerunRefused(u)
		}
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("task %d queued as a new intent (generation %d): every effect runs again", id, t.Generation), nil
	})
}

func (c commands) cancel(id int64) tea.Cmd {
	return c.act(func(ctx context.Context) (string, error) {
		t, err := c.store.Cancel(ctx, id)
		if err != nil {
			return "", err
		}
		if t.State == agentledger.StateCancelled {
			return fmt.Sprintf("task %d cancelled", id), nil
		}
		return fmt.Sprintf("task %d is running (worker %s): cancel requested; it stops before its next call", id, t.LeaseOwner), nil
	})
}

func (c commands) retry(id int64) tea.Cmd {
	return c.act(func(ctx context.Context) (string, error) {
		t, err := c.store.Retry(ctx, id)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("task %d queued again from attempt 1 (generation %d)", id, t.Generation), nil
	})
}

func (c commands) compensate(id int64) tea.Cmd {
	return c.act(func(ctx context.Context) (string, error) {
		t, err := c.store.Compensate(ctx, id)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("task %d is %s: a worker undoes its effects, newest first", id, t.State), nil
	})
}

// resolve settles the effect at step of task id.
func (c commands) resolve(id int64, step string, r Resolution) tea.Cmd {
	return c.act(func(ctx context.Context) (string, error) {
		out, err := c.store.Resolve(ctx, id, step, r)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("effect %s of task %d %s; %s", step, id, operator.Resolved(out.Task, r.Done), out.Where()), nil
	})
}

func (c commands) redeliver(id int64) tea.Cmd {
	return c.act(func(ctx context.Context) (string, error) {
		r, err := c.store.Redeliver(ctx, id)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("task %d: %s sent again (%s reopened)", id,
			plural(len(r.Notifications), "notification"), plural(r.Reopened, "ledger effect")), nil
	})
}

func (c commands) bulk(op bulkOp, f Filter) tea.Cmd {
	return c.act(func(ctx context.Context) (string, error) {
		if op == bulkRetry {
			res, err := c.store.RetryAll(ctx, f)
			return fmt.Sprintf("retried %s, skipped %d", plural(len(res.Done), "dead task"), len(res.Skipped)), err
		}
		res, err := c.store.CancelAll(ctx, f)
		msg := "cancelled " + plural(len(res.Done), "task")
		if len(res.Flagged) > 0 {
			msg += ", asked " + plural(len(res.Flagged), "running task") + " to stop before their next call"
		}
		return fmt.Sprintf("%s, skipped %d", msg, len(res.Skipped)), err
	})
}

// approvalCount counts the pending approval requests, for the title.
func (c commands) approvalCount() tea.Cmd {
	return c.call(func(ctx context.Context) tea.Msg {
		_, n, err := c.store.PendingApprovals(ctx, nil, 0)
		return approvalCountMsg{n: n, err: err}
	})
}

// pendingApprovals reads the oldest limit pending requests after after
// (nil: from the first).
func (c commands) pendingApprovals(after *approvals.Position, limit int) tea.Cmd {
	return c.call(func(ctx context.Context) tea.Msg {
		rs, n, err := c.store.PendingApprovals(ctx, after, limit)
		return approvalsMsg{after: after, requests: rs, total: n, err: err}
	})
}

// approval reads request id; decide asks for the preview of a decision.
func (c commands) approval(id int64, decide, approve bool) tea.Cmd {
	return c.call(func(ctx context.Context) tea.Msg {
		r, err := c.store.Approval(ctx, id)
		return approvalMsg{id: id, request: r, decide: decide, approve: approve, err: err}
	})
}

// decide approves or denies request id. A decision that came first is
// an error that says what it was: this one changed nothing.
func (c commands) decide(id int64, approve bool, reason string) tea.Cmd {
	return c.act(func(ctx context.Context) (string, error) {
		r, won, err := c.store.Decide(ctx, id, approve, reason)
		if err != nil {
			return "", err
		}
		if !won {
			return "", errors.New(decidedAlready(r))
		}
		if approve {
			return fmt.Sprintf("approval %d approved: task %d performs %s once", id, r.TaskID, r.Step), nil
		}
		return fmt.Sprintf("approval %d denied: task %d does not perform %s", id, r.TaskID, r.Step), nil
	})
}

// waitCount counts the waiting waits, for the title.
func (c commands) waitCount() tea.Cmd {
	return c.call(func(ctx context.Context) tea.Msg {
		_, n, err := c.store.Waiting(ctx, nil, 0)
		return waitCountMsg{n: n, err: err}
	})
}

// waiting reads the limit waiting waits due soonest after after (nil:
// from the first).
func (c commands) waiting(after *waits.Position, limit int) tea.Cmd {
	return c.call(func(ctx context.Context) tea.Msg {
		ws, n, err := c.store.Waiting(ctx, after, limit)
		return waitsMsg{after: after, waits: ws, total: n, err: err}
	})
}

// wait reads wait id for act.
func (c commands) wait(id int64, act waitAct) tea.Cmd {
	return c.call(func(ctx context.Context) tea.Msg {
		w, err := c.store.Wait(ctx, id)
		return waitMsg{id: id, wait: w, act: act, err: err}
	})
}

// sendSignal sends wait id its signal with payload, and says whether it
// woke the wait's task.
func (c commands) sendSignal(id int64, payload json.RawMessage) tea.Cmd {
	return c.act(func(ctx context.Context) (string, error) {
		sent, err := c.store.SendSignal(ctx, id, payload)
		if errors.Is(err, agentledger.ErrKeyReuse) {
			return "", fmt.Errorf("wait %d was sent its signal from the console already, with another payload: yours was not sent", id)
		}
		if err != nil {
			return "", err
		}
		return signalSent(id, sent), nil
	})
}

// signalSent says what the signal sent for wait id did.
func signalSent(id int64, sent waits.Sent) string {
	sig := sent.Signal
	what := fmt.Sprintf("signal %s key %s", sig.Name, sig.Key)
	switch {
	case sent.Duplicate:
		fate := "no wait has taken it yet"
		switch {
		case sig.WaitID != nil && sig.TaskID != nil:
			fate = fmt.Sprintf("wait %d of task %d took it", *sig.WaitID, *sig.TaskID)
		case sig.State == "expired":
			fate = "it expired, taken by no wait"
		}
		return fmt.Sprintf("%s was sent for wait %d already (signal %d, by %s): nothing changed; %s", what, id, sig.ID, sig.SentBy, fate)
	case sent.Woke != nil && sent.Woke.ID == id:
		return fmt.Sprintf("%s sent (signal %d): wait %d took it and task %d is woken", what, sig.ID, id, sent.Woke.TaskID)
	case sent.Woke != nil:
		return fmt.Sprintf("%s sent (signal %d), but wait %d of task %d took it, waiting for it longer: wait %d still waits",
			what, sig.ID, sent.Woke.ID, sent.Woke.TaskID, id)
	}
	return fmt.Sprintf("%s sent (signal %d), but no wait took it: wait %d had ended or passed its deadline; the signal expires unused",
		what, sig.ID, id)
}

// endWait ends wait id with reason. A wait that ended first is an error
// that says how: this end changed nothing.
func (c commands) endWait(id int64, reason string) tea.Cmd {
	return c.act(func(ctx context.Context) (string, error) {
		w, ended, err := c.store.EndWait(ctx, id, reason)
		if err != nil {
			return "", err
		}
		if !ended {
			return "", errors.New(endedAlready(w) + "; yours changed nothing")
		}
		return fmt.Sprintf("wait %d ended: task %d is woken, and its call at %s fails with your reason", id, w.TaskID, w.Step), nil
	})
}
