package tui

import (
	"fmt"
	"strconv"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
)

// openRedelivery shows the failed notifications of a task and what
// delivering each again sends, to confirm; with none failed it says so.
func (a App) openRedelivery(msg redeliveryMsg) (tea.Model, tea.Cmd) {
	if msg.err != nil {
		a.setStatus("", msg.err)
		return a, nil
	}
	id, s, ns := msg.id, a.env.styles, msg.redelivery.Notifications
	if len(ns) == 0 {
		a.setStatus("", fmt.Errorf("task %d has no failed notification", id))
		return a, nil
	}
	w := []int{4, 3, 15, 14, 10}
	lines := []string{
		fmt.Sprintf("Task %d has %s, given up by the dispatchers. Fix the cause first (the token, the channel, the app's membership): a notification that fails again is given up again.",
			id, plural(len(ns), "failed notification")),
		"",
		"\t" + s.Bold.Render(columns(w, "ID", "GEN", "EVENT", "RULE/STEP", "CHANNEL", "SENDS")),
	}
	for _, n := range ns {
		source := n.Rule
		if source == "" {
			source = n.Step
		}
		lines = append(lines,
			"\t"+columns(w, strconv.FormatInt(n.ID, 10), strconv.Itoa(int(n.Generation)), n.Event, orDash(source),
				n.Channel, n.Plan.String()),
			strings.Repeat(" ", w[0]+w[1]+2)+s.Error.Render(fmt.Sprintf("failed %s: %s",
				plural(int(n.Failures), "time"), orDash(oneLine(n.LastError)))))
	}
	lines = append(lines, "",
		"The daemons deliver them again within a poll, under the same ledger keys as before: there is still one message per (task generation, rule).")
	a.openDialog(newDialog(a.env, fmt.Sprintf("Send the failed notifications of task %d again?", id), lines,
		func() tea.Cmd { return a.cmd.redeliver(id) }))
	return a, nil
}
