package tui

import (
	"encoding/json"
	"errors"
	"fmt"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/agentledger/agentledger/waits"
)

// askWait loads wait w afresh to ask before act on it: the list may be a
// refresh behind a signal, a deadline or another operator.
func (a *App) askWait(w *Wait, act waitAct) tea.Cmd {
	if w == nil {
		a.setStatus("", errors.New("no wait is selected"))
		return nil
	}
	if act == waitSend && w.Kind != waits.KindSignal {
		a.setStatus("", fmt.Errorf("wait %d waits for %s, not for a signal: there is nothing to send (e ends it)", w.ID, waitsFor(w.Wait)))
		return nil
	}
	return a.cmd.wait(w.ID, act)
}

// openWaitAction asks to confirm msg's action on its wait: sending its
// signal, with a payload ({} unless given), which y alone confirms; or
// ending it, with a reason, required. A wait that ended meanwhile says
// how, and nothing opens.
func (a App) openWaitAction(msg waitMsg) (tea.Model, tea.Cmd) {
	if msg.err != nil {
		a.setStatus("", msg.err)
		return a, nil
	}
	w, id := msg.wait, msg.id
	if w.State != waits.Waiting {
		a.setStatus("", errors.New(endedAlready(w.Wait)+"; nothing was done"))
		return a, nil
	}
	where := fmt.Sprintf("Task %d (%s), step %s", w.TaskID, w.Tenant, w.Step)
	if msg.act == waitSend {
		lines := []string{
			where + " waits for this signal: its payload becomes the step's result, and the task wakes and goes on.",
			"  signal: " + w.Signal,
			"  key:    " + w.Key,
			"Sending it again for this wait is the same signal: it changes nothing.",
		}
		dropped := fmt.Sprintf("signal not sent: wait %d still waits, and the payload you gave was not sent", id)
		a.openDialog(newPayloadDialog(a.env, fmt.Sprintf("Send wait %d its signal?", id), "send", dropped, lines,
			func(payload json.RawMessage) tea.Cmd { return a.cmd.sendSignal(id, payload) }))
		return a, nil
	}
	deadline := "its deadline is"
	if w.Kind == waits.KindTimer {
		deadline = "it is due at"
	}
	lines := []string{
		fmt.Sprintf("%s stops waiting for %s; %s %s.", where, waitsFor(w.Wait), deadline, a.env.at(w.Deadline)),
		"Its call fails with your reason: a steps task fails for good (its compensations run when declared); an agent is told why and goes on.",
	}
	if w.Kind == waits.KindChildren && w.Children > w.Ended {
		// Ending the wait ends no child: a parent failed for good can no
		// longer cancel them.
		kids := fmt.Sprintf("Its %d unfinished children run on", w.Children-w.Ended)
		if w.Children-w.Ended == 1 {
			kids = "Its unfinished child runs on"
		}
		lines = append(lines, kids+": ending the wait cancels none (cancelling the task instead cancels its unfinished children too).")
	}
	d, cmd := newReasonDialog(a.env, fmt.Sprintf("End wait %d?", id), "end the wait", lines,
		func(reason string) tea.Cmd { return a.cmd.endWait(id, reason) })
	d.required = "a reason is required: the waiting call fails with it, and the task's journal keeps it"
	a.openDialog(d)
	return a, cmd
}
