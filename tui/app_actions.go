package tui

import (
	"fmt"
	"slices"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/notify/outbox"
	"github.com/agentledger/agentledger/operator"
	"github.com/agentledger/agentledger/waits"
)

// current is the task the actions apply to: the selected row, or the task
// shown.
func (a *App) current() *agentledger.Task {
	switch a.view {
	case viewTasks:
		return a.tasks.selected()
	case viewTask:
		if a.task.detail != nil {
			return a.task.detail.Task
		}
	}
	return nil
}

// action starts the operator action bound to msg, if any: a dialog to
// confirm, or the load that the dialog needs first.
func (a *App) action(msg tea.KeyMsg) (tea.Cmd, bool) {
	k := a.env.keys
	if a.view == viewTasks {
		switch {
		case key.Matches(msg, k.BulkRetry):
			return a.cmd.bulkCount(bulkRetry, a.tasks.filter), true
		case key.Matches(msg, k.BulkCancel):
			return a.cmd.bulkCount(bulkCancel, a.tasks.filter), true
		}
	}
	bindings := []key.Binding{k.Replay, k.Rerun, k.Cancel, k.Retry, k.Compensate, k.Resolve, k.Redeliver}
	if !slices.ContainsFunc(bindings, func(b key.Binding) bool { return key.Matches(msg, b) }) {
		return nil, false
	}
	t := a.current()
	if t == nil {
		return nil, a.view != viewWorkers
	}
	switch {
	case key.Matches(msg, k.Replay):
		if t.State == agentledger.StateCompensated {
			a.setStatus("", operator.ReplayCompensated(t.ID))
			return nil, true
		}
		if !operator.Replayable(t.State) {
			a.setStatus("", fmt.Errorf("task %d is %s: only a task no worker holds (%s) can be replayed", t.ID, t.State, agentledger.OneOf(operator.ReplayableStates)))
			return nil, true
		}
		return a.cmd.preview(t.ID), true
	case key.Matches(msg, k.Rerun):
		return a.checkRerun(t), true
	case key.Matches(msg, k.Cancel):
		a.openCancel(t)
	case key.Matches(msg, k.Retry):
		a.openRetry(t)
	case key.Matches(msg, k.Compensate):
		if !operator.Compensable(t.State) {
			a.setStatus("", fmt.Errorf("task %d is %s: only a %s task can be compensated", t.ID, t.State, agentledger.OneOf(operator.CompensableStates)))
			return nil, true
		}
		return a.cmd.compensationPreview(t.ID), true
	case key.Matches(msg, k.Resolve):
		return a.openResolve(t), true
	case key.Matches(msg, k.Redeliver):
		return a.cmd.redeliveryPreview(t.ID), true
	}
	return nil, true
}

// openDialog shows d.
func (a *App) openDialog(d *dialogModel) {
	a.dialog = d
	a.layout()
}

// openPreview shows a replay preview to confirm.
func (a App) openPreview(msg previewMsg) (tea.Model, tea.Cmd) {
	if msg.err != nil {
		a.setStatus("", msg.err)
		return a, nil
	}
	p, s := msg.preview, a.env.styles
	t := p.Task
	n, refused := map[Plan]int{}, 0
	for _, e := range p.Effects {
		if e.Refused != "" {
			refused++
			continue
		}
		n[e.Plan]++
	}
	var tally []string
	for _, plan := range []Plan{PlanServed, PlanRun, PlanLookup, PlanResolve} {
		if n[plan] > 0 {
			tally = append(tally, fmt.Sprintf("%d %s", n[plan], plan))
		}
	}
	if refused > 0 {
		tally = append(tally, fmt.Sprintf("%d refused: not granted", refused))
	}
	summary := "no effects recorded yet: every effect runs."
	if len(p.Effects) > 0 {
		summary = fmt.Sprintf("%s recorded: %s.", plural(len(p.Effects), "effect"), strings.Join(tally, ", "))
	}
	lines := []string{
		fmt.Sprintf("Task %d (%s, %s) runs again in the same generation %d, from attempt 1.", t.ID, t.Kind, t.State, t.Generation),
		summary,
		"",
	}
	after := "Effects after these run for the first time."
	if t.Compensation != "" {
		// A parked compensation: the replay undoes, it does not redo.
		if len(p.Effects) == 0 {
			summary = "no effects recorded: nothing to undo."
		}
		lines = append(lines[:1], "It continues the task's compensation, not its forward path: compensations recorded "+
			"so far are served, a keyed one that failed is sent again, the rest run, newest effect first.", summary, "")
		after = "Nothing of the forward path runs again."
	}
	if len(p.Effects) > 0 {
		// The columns fit their cells: a step is what a resolve names.
		header := []string{"STEP", "OPERATION", "CLASS", "STATE", "ON REPLAY"}
		rows := make([][]string, len(p.Effects))
		for i, e := range p.Effects {
			rows[i] = []string{e.Step, e.Operation, string(e.Class), string(e.State), ""}
		}
		row := fitColumns(header, rows, 0, 0)
		lines = append(lines, "\t"+s.Bold.Render(row(header)))
		for i, e := range p.Effects {
			plan := s.Plan(e.Plan)
			if e.Refused != "" {
				plan = s.Danger.Render("refused: not granted")
			}
			r := rows[i]
			r[3], r[4] = s.Effect(e.State), plan
			lines = append(lines, "\t"+row(r))
		}
		lines = append(lines, "")
	}
	lines = append(lines, after)
	if i := slices.IndexFunc(p.Effects, func(e PlannedEffect) bool { return e.Refused != "" }); i >= 0 {
		stop := "; the replay stops there."
		if t.Compensation != "" {
			stop = "; the compensation parks the task again there."
		}
		lines = append(lines, s.Danger.Render(p.Effects[i].Step+": "+p.Effects[i].Refused+stop))
	}
	if slices.ContainsFunc(p.Effects, func(e PlannedEffect) bool { return e.Plan == PlanResolve }) {
		lines = append(lines, s.Danger.Render("An effect needs resolution: the task parks in needs_attention again until it is resolved (v)."))
	}
	// A decided request stands for its generation, as agentctl replay warns.
	for _, r := range p.Refused {
		lines = append(lines, s.Danger.Render(fmt.Sprintf("The call at %s was not approved (request %d %s): it is refused again there, "+
			"and nobody is asked; R re-runs the task as a new intent, which asks anew.", r.Step, r.ID, operator.RefusedHow(r))))
	}
	id := t.ID
	a.openDialog(newDialog(a.env, fmt.Sprintf("Replay task %d?", id), lines, func() tea.Cmd { return a.cmd.replay(id) }))
	return a, nil
}

// checkRerun reads what a re-run of t would be refused for (its effects
// of unknown outcome) before asking: the dialog must not offer what the
// re-run refuses.
func (a *App) checkRerun(t *agentledger.Task) tea.Cmd {
	// A compensated task may run again as a new intent, as agentctl
	// rerun allows: its undone effects are done anew.
	if !operator.Replayable(t.State) && t.State != agentledger.StateCompensated {
		from := append(slices.Clip(operator.ReplayableStates), agentledger.StateCompensated)
		a.setStatus("", fmt.Errorf("task %d is %s: only a task no worker holds (%s) can be re-run", t.ID, t.State, agentledger.OneOf(from)))
		return nil
	}
	return a.cmd.rerunCheck(t)
}

// openRerun asks before running every effect again, or says why it
// cannot.
func (a App) openRerun(msg rerunCheckMsg) (tea.Model, tea.Cmd) {
	t := msg.task
	switch {
	case msg.err != nil:
		a.setStatus("", msg.err)
		return a, nil
	case msg.unsettled != nil:
		a.setStatus("", rerunRefused(msg.unsettled))
		return a, nil
	}
	lines := []string{
		fmt.Sprintf("Task %d (%s, %s) runs again as a NEW INTENT: generation %d → %d.", t.ID, t.Kind, t.State, t.Generation, t.Generation+1),
		a.env.styles.Danger.Render("ALL effects run again: HTTP calls, charges, child tasks, notifications, model calls. The ledger serves nothing of generation " + fmt.Sprint(t.Generation) + "."),
	}
	if t.State != agentledger.StateCompensated { // its effects were undone: a replay is refused
		lines = append(lines, "", "To run only the unfinished effects, replay instead (r).")
	}
	id := t.ID
	d := newDialog(a.env, fmt.Sprintf("Re-run task %d as a new intent?", id), lines, func() tea.Cmd { return a.cmd.rerun(id) })
	d.danger = true
	a.openDialog(d)
	return a, nil
}

// rerunRefused is u with what to do about it from the console.
func rerunRefused(u *operator.UnsettledError) error {
	return fmt.Errorf("%w; resolve them first (v on the task's page), or re-run anyway with agentctl rerun %d --despite-unknown", u, u.TaskID)
}

// openCancel asks before cancelling.
func (a *App) openCancel(t *agentledger.Task) {
	if t.State.Finished() {
		a.setStatus("", fmt.Errorf("task %d already finished (%s): nothing to cancel", t.ID, t.State))
		return
	}
	how := "It is cancelled at once."
	if t.State == agentledger.StateRunning {
		how = fmt.Sprintf("Worker %s runs it: its attempt stops before its next call (a call in flight finishes and is recorded).", t.LeaseOwner)
	}
	lines := []string{fmt.Sprintf("Task %d (%s) is %s.", t.ID, t.Kind, t.State), how}
	if r := a.task.pendingApproval(); a.view == viewTask && r != nil {
		lines = append(lines, fmt.Sprintf("Its approval request %d is withdrawn: nobody can decide it any more.", r.ID))
	}
	if w := a.task.waiting(); a.view == viewTask && w != nil {
		line := fmt.Sprintf("Its wait %d for %s is cancelled.", w.ID, waitsFor(w.Wait))
		if w.Kind == waits.KindChildren {
			line = fmt.Sprintf("Its wait %d for its children is cancelled, and its unfinished children with it.", w.ID)
		}
		lines = append(lines, line)
	}
	id := t.ID
	a.openDialog(newDialog(a.env, fmt.Sprintf("Cancel task %d?", id), lines, func() tea.Cmd { return a.cmd.cancel(id) }))
}

// openRetry asks before retrying a dead task.
func (a *App) openRetry(t *agentledger.Task) {
	if t.State != agentledger.StateDead {
		a.setStatus("", fmt.Errorf("task %d is %s: only a dead task can be retried (replay runs the others again)", t.ID, t.State))
		return
	}
	id := t.ID
	a.openDialog(newDialog(a.env, fmt.Sprintf("Retry dead task %d?", id), []string{
		fmt.Sprintf("Task %d (%s) runs again from attempt 1 in generation %d: the ledger serves the effects it completed.", id, t.Kind, t.Generation),
		"Last error: " + orDash(oneLine(t.LastError)),
	}, func() tea.Cmd { return a.cmd.retry(id) }))
}

// openResolve asks how an effect of unknown outcome was settled.
func (a *App) openResolve(t *agentledger.Task) tea.Cmd {
	if a.view != viewTask {
		// Only a task that needs attention can have an effect to
		// resolve: say so rather than send the operator looking.
		if t.State != agentledger.StateNeedsAttention {
			a.setStatus("", fmt.Errorf("task %d is %s: nothing to resolve (an effect of unknown outcome parks its task in needs_attention)", t.ID, t.State))
			return nil
		}
		a.setStatus("", fmt.Errorf("open task %d (enter) to resolve its effect of unknown outcome", t.ID))
		return nil
	}
	e, ok := a.task.resolveTarget()
	if !ok {
		for _, p := range a.task.detail.Journal {
			switch {
			case p.Undoes == "" || p.State != ledger.StatePending:
			case t.State != agentledger.StateNeedsAttention:
				a.setStatus("", fmt.Errorf("task %d's compensation at %s is being sent (the task is %s)", t.ID, p.Step, t.State))
				return nil
			default:
				a.setStatus("", fmt.Errorf("task %d's compensation at %s is pending: it may have been sent, so it is not resolved by hand; "+
					"replay it (r) once its cause is fixed, and the ledger decides", t.ID, p.Step))
				return nil
			}
		}
		a.setStatus("", fmt.Errorf("task %d has no effect of unknown outcome: every effect of its journal completed or failed, so nothing is to resolve", t.ID))
		return nil
	}
	id, step := t.ID, e.Step
	if e.State == ledger.StateFailed {
		return a.openResolveCompensation(id, e)
	}
	// Say what the ledger recorded: an answer that does not settle it (a
	// 502, a reset connection), or nothing, when the attempt died first.
	why := "its attempt died after performing it, before recording it."
	if e.Error != "" {
		why = "its attempt performed it and recorded an answer that does not say whether it took effect:"
	}
	lines := []string{fmt.Sprintf("Effect %s (%s, %s) of task %d has an unknown outcome: %s", step, e.Operation, e.Class, id, why)}
	if e.Error != "" {
		lines = append(lines, "  "+oneLine(e.Error))
	}
	lines = append(lines, "Check the target by hand, then say what happened. The task is then replayed: completed effects are served, the rest run.")
	d, cmd := newNoteDialog(a.env, fmt.Sprintf("Resolve effect %s of task %d", step, id), lines,
		func(note string, done bool) tea.Cmd {
			return a.cmd.resolve(id, step, Resolution{Done: done, Note: note})
		})
	a.openDialog(d)
	return cmd
}

// openResolveCompensation asks for the note of a compensation that
// failed for good (refused, or one that could not be sent), resolved as
// done: the operator undid the effect by hand. Done only: a compensation
// is never "not performed" for the task to go on.
func (a *App) openResolveCompensation(id int64, e operator.Effect) tea.Cmd {
	lines := []string{fmt.Sprintf("The compensation at %s (%s) of task %d failed for good:", e.Step, e.Operation, id),
		"  " + oneLine(e.Error),
		fmt.Sprintf("If you undid %s by hand, say so: the task then goes on undoing the rest. Otherwise, if its cause can be fixed (a grant, an allow-list), fix it and replay (r).", e.Undoes)}
	d, cmd := newNoteDialog(a.env, fmt.Sprintf("Resolve compensation %s of task %d as done", e.Step, id), lines,
		func(note string, _ bool) tea.Cmd {
			return a.cmd.resolve(id, e.Step, Resolution{Done: true, Note: note})
		})
	d.toggle = false
	a.openDialog(d)
	return cmd
}

// openBulk shows how many tasks a bulk action touches, to confirm.
func (a App) openBulk(msg bulkCountMsg) (tea.Model, tea.Cmd) {
	if msg.err != nil {
		a.setStatus("", msg.err)
		return a, nil
	}
	what, verb := "dead", "Retry"
	if msg.op == bulkCancel {
		what, verb = "unfinished", "Cancel"
	}
	scope := describe(msg.filter)
	if msg.n == 0 {
		a.setStatus("", fmt.Errorf("no %s tasks match %s", what, scope))
		return a, nil
	}
	verbOf := map[bool]string{true: "matches", false: "match"}
	lines := []string{fmt.Sprintf("%s %s %s.", plural(int(msg.n), what+" task"), verbOf[msg.n == 1], scope)}
	if msg.op == bulkRetry {
		lines = append(lines, "Each runs again from attempt 1 in its generation: the ledger serves the effects it completed; tasks whose ledger rows retention removed are skipped.")
	} else {
		lines = append(lines, "Those not running are cancelled at once (a waiting task's request is withdrawn, its wait cancelled); running ones stop before their next call.")
	}
	if q := a.tasks.search.Value(); q != "" {
		// The search narrows the page shown, not what the filter selects:
		// the list behind the dialog is not what this acts on.
		lines = append(lines, fmt.Sprintf("The search %q narrows only the page shown: this acts on every %s task of the filter (f sets a filter).", q, what))
	}
	op, f := msg.op, msg.filter
	which := "all " + plural(int(msg.n), what+" task")
	if msg.n == 1 {
		which = "the 1 " + what + " task"
	}
	d := newDialog(a.env, fmt.Sprintf("%s %s?", verb, which), lines, func() tea.Cmd { return a.cmd.bulk(op, f) })
	d.danger = true
	a.openDialog(d)
	return a, nil
}

// describe words a filter.
func describe(f Filter) string {
	if f == (Filter{}) {
		return "the filter (all tasks)"
	}
	return "the filter " + f.String()
}

// allows reports whether the action bound to b applies to d's task now,
// for the footer to offer it: the states each action starts from, an
// effect to resolve, a failed notification to send again.
func (k KeyMap) allows(d *Detail, b key.Binding) bool {
	t := d.Task
	is := func(a key.Binding) bool { return slices.Equal(a.Keys(), b.Keys()) }
	// An effect of unknown outcome refuses a replay (it would stop there
	// again) and a re-run (the call may have gone out): v comes first.
	unknown := slices.ContainsFunc(d.Journal, func(e operator.Effect) bool { return e.State == ledger.StateUnknown })
	switch {
	case is(k.Replay):
		return operator.Replayable(t.State) && !unknown
	case is(k.Rerun):
		// Not while undoing its effects: the re-run would leave them half undone.
		return ((operator.Replayable(t.State) && t.Compensation == "") || t.State == agentledger.StateCompensated) && !unknown
	case is(k.Cancel):
		// A compensation is not cancelled.
		return !t.State.Finished() && t.State != agentledger.StateCompensating && t.Compensation == ""
	case is(k.Retry):
		return t.State == agentledger.StateDead
	case is(k.Compensate):
		// Not with nothing to undo: the undo would be refused.
		return operator.Compensable(t.State) && t.Compensation == "" &&
			slices.ContainsFunc(d.Journal, func(e operator.Effect) bool { return e.Undoable })
	case is(k.Resolve):
		_, ok := resolvable(d)
		return ok
	case is(k.Redeliver):
		return slices.ContainsFunc(d.Notifications, func(n operator.Notification) bool { return n.State == outbox.StateFailed })
	}
	return true
}
