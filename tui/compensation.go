package tui

import (
	"fmt"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/render"
)

// openCompensation shows what a compensation would undo, newest first, to
// confirm; a task with nothing to undo gets a status line instead.
func (a App) openCompensation(msg compensationMsg) (tea.Model, tea.Cmd) {
	if msg.err != nil {
		a.setStatus("", msg.err)
		return a, nil
	}
	p, s := msg.plan, a.env.styles
	t := p.Task
	if len(p.Undos) == 0 {
		a.setStatus("", fmt.Errorf("task %d (%s): nothing to compensate: none of its completed effects declared a compensation", t.ID, t.State))
		return a, nil
	}
	lines := []string{
		fmt.Sprintf("Task %d (%s, %s) undoes %s, newest first:", t.ID, t.Kind, t.State, plural(len(p.Undos), "effect")),
		"",
	}
	header := []string{"STEP", "OPERATION", "STATE", "UNDONE BY", "RESULT"}
	rows := make([][]string, len(p.Undos))
	unknown := false
	for i, u := range p.Undos {
		res := "-"
		if len(u.Result) > 0 {
			res = oneLine(string(u.Result))
		}
		rows[i] = []string{u.Step, u.Operation, string(u.State), u.Tool, res}
		unknown = unknown || u.State != ledger.StateCompleted
	}
	row := fitColumns(header, rows, 0, 0)
	lines = append(lines, "\t"+s.Bold.Render(row(header)))
	for i, u := range p.Undos {
		r := rows[i]
		r[2] = s.Effect(u.State)
		lines = append(lines, "\t"+row(r))
		if len(u.Args) > 0 {
			// The call itself, wrapped: what the operator checks before y.
			lines = append(lines, "    sends "+render.CallText(u.Tool, u.Args))
		}
	}
	lines = append(lines, "", "The task ends compensated; if an effect cannot be undone it parks in needs_attention.")
	if unknown {
		lines = append(lines, s.Danger.Render("An effect of unknown outcome parks the compensation until it is resolved (v)."))
	}
	id := t.ID
	d := newDialog(a.env, fmt.Sprintf("Compensate task %d?", id), lines, func() tea.Cmd { return a.cmd.compensate(id) })
	d.danger = true
	a.openDialog(d)
	return a, nil
}
