package tui

import (
	"errors"
	"fmt"
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/agentledger/agentledger/approvals"
	"github.com/agentledger/agentledger/render"
)

// askDecision loads request id afresh to preview a decision on it: the
// list may be a refresh behind another approver.
func (a *App) askDecision(r *approvals.Request, approve bool) tea.Cmd {
	if r == nil {
		a.setStatus("", errors.New("no approval request is selected"))
		return nil
	}
	return a.cmd.approval(r.ID, true, approve)
}

// openDecision shows the call a decision on msg's request lets through or
// stops, to confirm: y alone approves, r first adds a reason; a denial
// takes one, required. A request decided meanwhile says how, and nothing
// opens.
func (a App) openDecision(msg approvalMsg) (tea.Model, tea.Cmd) {
	if msg.err != nil {
		a.setStatus("", msg.err)
		return a, nil
	}
	r := msg.request
	if r.State != approvals.Pending {
		a.setStatus("", errors.New(decidedAlready(r)))
		return a, nil
	}
	// The arguments are cut to leave the dialog room for its text and
	// prompt (a denial's is longer); the request page (enter) shows them
	// whole. Each object's scalars come first, so that a cut leaves the
	// amount in view rather than the first lines of a long list.
	room := a.bodyHeight() - 11
	if msg.approve {
		room -= 2 // the reason, once r opens it
	} else {
		room -= 3
		if r.Reason == "" {
			room += 2
		}
	}
	room = max(room, 3)
	args := strings.Split(render.PrettyJSONScalarsFirst(r.Call, ""), "\n")
	if len(args) > room {
		args = append(args[:room-1], fmt.Sprintf("… %d more lines: the request's page (a, enter) shows them", len(args)-room+1))
	}
	call := []string{"  " + approvals.Summary(r) + " (" + r.Class + ")"}
	for _, l := range args {
		call = append(call, "\t  "+l) // a table line: JSON is cut, never wrapped
	}
	if r.Reason != "" {
		call = append(call, "Model's reason: "+oneLine(r.Reason))
	}
	id := r.ID
	where := fmt.Sprintf("task %d (%s), step %s", r.TaskID, r.Tenant, r.Step)
	if msg.approve {
		lines := append([]string{"Once approved, " + where + " performs this, once:"}, call...)
		dropped := fmt.Sprintf("approval %d not decided: it still waits, and the reason you typed was not recorded", id)
		a.openDialog(newOptionalReasonDialog(a.env, fmt.Sprintf("Approve request %d?", id), "approve", dropped, lines,
			func(reason string) tea.Cmd { return a.cmd.decide(id, true, reason) }))
		return a, nil
	}
	lines := append([]string{"Denied, " + where + " does not perform this call: a steps task fails for good; an agent is told why and goes on."}, call...)
	d, cmd := newReasonDialog(a.env, fmt.Sprintf("Deny request %d?", id), "deny", lines,
		func(reason string) tea.Cmd { return a.cmd.decide(id, false, reason) })
	a.openDialog(d)
	return a, cmd
}
