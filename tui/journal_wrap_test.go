package tui

import (
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/operator"
)

// An expanded row's error is wrapped to the view, whole: at 80 columns an
// unknown outcome's error, which says what was called, was cut at the edge.
func TestJournalExpansionWrapsTheError(t *testing.T) {
	t.Parallel()
	e := &env{keys: DefaultKeyMap(), styles: DefaultStyles(), opts: Options{}.withDefaults()}
	m := newJournalModel(e)
	m.setSize(80, 30)
	const long = "the call's outcome is unknown (unsafe_http: POST http://127.0.0.1:7470/demo/wires: context deadline exceeded after 30s, the end of it"
	m.set([]operator.Effect{{Step: "tool/0", Operation: "unsafe_http", Class: ledger.Unsafe, Key: "k1", State: ledger.StateUnknown, Error: long},
		{Step: "tool/1", Operation: "notify.post", Class: ledger.Reconcilable, Key: "k2", State: ledger.StatePending}})
	m = m.Update(tea.KeyMsg{Type: tea.KeyEnter})
	v := m.View()
	if !strings.Contains(v, "end of it") || !strings.Contains(v, "        http://127.0.0.1:7470/demo/wires") {
		t.Fatalf("the expanded error is cut:\n%s", v)
	}
	for _, l := range strings.Split(v, "\n") {
		if w := len([]rune(l)); w > 80 {
			t.Errorf("a line of %d cells: %q", w, l)
		}
	}
	if !strings.Contains(v, "tool/1") {
		t.Errorf("the next row is not shown after the wrapped expansion:\n%s", v)
	}
}
