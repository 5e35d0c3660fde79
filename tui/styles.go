package tui

import (
	"github.com/charmbracelet/bubbles/table"
	"github.com/charmbracelet/lipgloss"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/ledger"
)

// Styles are every style the console renders with. The colours are the
// terminal's 16 ANSI colours, so they follow its theme; under an ASCII
// colour profile (tests) everything renders as plain text.
type Styles struct {
	Title     lipgloss.Style
	TitleDim  lipgloss.Style
	Dim       lipgloss.Style
	Bold      lipgloss.Style
	Label     lipgloss.Style
	Status    lipgloss.Style
	Error     lipgloss.Style
	TabActive lipgloss.Style
	Tab       lipgloss.Style
	Cursor    lipgloss.Style
	Dialog    lipgloss.Style
	Danger    lipgloss.Style
	Stale     lipgloss.Style
	Table     table.Styles

	states map[agentledger.TaskState]lipgloss.Style
	plans  map[Plan]lipgloss.Style
	effect map[ledger.State]lipgloss.Style
}

// DefaultStyles returns the console's styles.
func DefaultStyles() Styles {
	c := func(s string) lipgloss.Color { return lipgloss.Color(s) }
	fg := func(col string) lipgloss.Style { return lipgloss.NewStyle().Foreground(c(col)) }
	return Styles{
		Title:     lipgloss.NewStyle().Bold(true).Foreground(c("14")),
		TitleDim:  fg("8"),
		Dim:       fg("8"),
		Bold:      lipgloss.NewStyle().Bold(true),
		Label:     fg("8"),
		Status:    fg("10"),
		Error:     lipgloss.NewStyle().Bold(true).Foreground(c("9")),
		TabActive: lipgloss.NewStyle().Bold(true).Underline(true).Foreground(c("14")),
		Tab:       fg("8"),
		Cursor:    lipgloss.NewStyle().Reverse(true),
		Dialog:    lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).BorderForeground(c("12")).Padding(0, 1),
		Danger:    lipgloss.NewStyle().Bold(true).Foreground(c("9")),
		Stale:     lipgloss.NewStyle().Bold(true).Foreground(c("9")),
		Table: table.Styles{
			Header:   lipgloss.NewStyle().Bold(true).PaddingRight(1),
			Cell:     lipgloss.NewStyle().PaddingRight(1),
			Selected: lipgloss.NewStyle().Reverse(true),
		},
		states: map[agentledger.TaskState]lipgloss.Style{
			agentledger.StateQueued:         fg("12"),
			agentledger.StateRunning:        fg("14"),
			agentledger.StateRetrying:       fg("11"),
			agentledger.StateSucceeded:      fg("10"),
			agentledger.StateDead:           fg("9"),
			agentledger.StateCancelled:      fg("8"),
			agentledger.StateNeedsAttention: lipgloss.NewStyle().Bold(true).Foreground(c("13")),
			// Waiting is for a person too, but nothing is wrong: the
			// colour of needs_attention without the bold.
			agentledger.StateWaiting: fg("13"),
			// Undoing is work in flight, like retrying; undone is an end
			// that is not a success.
			agentledger.StateCompensating: fg("3"),
			agentledger.StateCompensated:  fg("5"),
		},
		plans: map[Plan]lipgloss.Style{
			PlanServed:  fg("10"),
			PlanRun:     fg("11"),
			PlanLookup:  fg("11"),
			PlanResolve: lipgloss.NewStyle().Bold(true).Foreground(c("13")),
		},
		effect: map[ledger.State]lipgloss.Style{
			ledger.StateCompleted: fg("10"),
			ledger.StateFailed:    fg("9"),
			ledger.StatePending:   fg("11"),
			ledger.StateUnknown:   lipgloss.NewStyle().Bold(true).Foreground(c("13")),
		},
	}
}

// State renders a task state in its colour.
func (s Styles) State(st agentledger.TaskState) string { return s.states[st].Render(string(st)) }

// StateStyle is the style of a task state.
func (s Styles) StateStyle(st agentledger.TaskState) lipgloss.Style { return s.states[st] }

// Plan renders a replay plan in its colour.
func (s Styles) Plan(p Plan) string { return s.plans[p].Render(string(p)) }

// Effect renders a ledger state in its colour.
func (s Styles) Effect(st ledger.State) string { return s.effect[st].Render(string(st)) }
