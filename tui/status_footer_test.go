package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/operator"
)

// A status wraps at spaces to the width and reads whole: no line ends in
// "…", and a command's flag is not split at its hyphen.
func TestStatusWrapsWhole(t *testing.T) {
	a := App{env: &env{styles: DefaultStyles()}, width: 80, statusErr: true,
		status: "task 27 has effects whose outcome is not known, at tool/0: each may have been performed, and a re-run would " +
			"perform it again under a new key; settle it with agentctl resolve 27 --step tool/0, or re-run anyway with " +
			"agentctl rerun 27 --despite-unknown"}
	got := ansi.Strip(a.statusView())
	for _, l := range strings.Split(got, "\n") {
		if ansi.StringWidth(l) > 80 || strings.HasSuffix(l, "…") {
			t.Errorf("line %q (%d cells)", l, ansi.StringWidth(l))
		}
	}
	if !strings.Contains(strings.Join(strings.Fields(got), " "), "agentctl rerun 27 --despite-unknown") || strings.Contains(got, "--\n") {
		t.Errorf("the command does not read whole:\n%s", got)
	}
}

// A task stopped at an effect of unknown outcome is offered resolve, not
// the replay and re-run its journal refuses.
func TestFooterOffersResolveNotReplayAtAnUnknownEffect(t *testing.T) {
	k := DefaultKeyMap()
	d := &Detail{Detail: operator.Detail{Task: &agentledger.Task{ID: 27, State: agentledger.StateNeedsAttention},
		Journal: []operator.Effect{{Step: "tool/0", State: ledger.StateUnknown}}}}
	offered := map[string]bool{}
	for _, b := range k.taskHelp(d).ShortHelp() {
		offered[b.Help().Key] = true
	}
	if !offered["v"] || offered["r"] || offered["R"] {
		t.Errorf("offered %v: want v, and neither r nor R", offered)
	}
}

// Undo is offered for a task with an effect its compensation would undo,
// and not for one with none.
func TestFooterOffersUndoOnlyWithSomethingToUndo(t *testing.T) {
	k := DefaultKeyMap()
	offers := func(d *Detail) bool {
		for _, b := range k.taskHelp(d).ShortHelp() {
			if b.Help().Key == "u" {
				return true
			}
		}
		return false
	}
	task := &agentledger.Task{ID: 4, State: agentledger.StateDead}
	if offers(&Detail{Detail: operator.Detail{Task: task, Journal: []operator.Effect{{Step: "tool/0", State: ledger.StateCompleted}}}}) {
		t.Error("undo offered with nothing to undo")
	}
	if !offers(&Detail{Detail: operator.Detail{Task: task, Journal: []operator.Effect{{Step: "tool/0", State: ledger.StateCompleted, Undoable: true}}}}) {
		t.Error("undo not offered for an undoable effect")
	}
}
