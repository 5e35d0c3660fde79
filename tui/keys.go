package tui

import (
	"slices"
	"strings"

	"github.com/charmbracelet/bubbles/key"

	"github.com/agentledger/agentledger/approvals"
	"github.com/agentledger/agentledger/waits"
)

// KeyMap is the console's one keymap. Each view shows the bindings that
// apply to it (see the help functions below); the bindings themselves are
// defined once, here.
type KeyMap struct {
	// Everywhere.
	Quit key.Binding
	Help key.Binding
	Back key.Binding

	// Moving.
	Up       key.Binding
	Down     key.Binding
	PageUp   key.Binding
	PageDown key.Binding
	Top      key.Binding
	Bottom   key.Binding

	// The task table.
	Open        key.Binding
	NextPage    key.Binding
	PrevPage    key.Binding
	Search      key.Binding
	Filter      key.Binding
	ClearFilter key.Binding
	State       key.Binding
	Sort        key.Binding
	Workers     key.Binding
	Limits      key.Binding
	Shares      key.Binding
	BulkRetry   key.Binding
	BulkCancel  key.Binding
	Approvals   key.Binding
	Waits       key.Binding

	// Deciding an approval request (the approvals view, a waiting task).
	// Approve opens a preview that y alone confirms; Reason, in it, opens
	// the approval's optional reason.
	Approve     key.Binding
	DenyRequest key.Binding
	Reason      key.Binding

	// Acting on a wait (the waits view, a waiting task): send the signal
	// a signal wait waits for (Payload, in its dialog, edits the
	// signal's payload), or end the wait.
	SendSignal key.Binding
	EndWait    key.Binding
	Payload    key.Binding

	// Actions on a task.
	Replay     key.Binding
	Rerun      key.Binding
	Cancel     key.Binding
	Retry      key.Binding
	Compensate key.Binding
	Resolve    key.Binding
	Redeliver  key.Binding

	// The task view.
	NextTab key.Binding
	PrevTab key.Binding
	Expand  key.Binding

	// Dialogs and inputs. ConfirmKey alone confirms a dangerous action
	// (one that performs effects again or undoes them): enter, pressed
	// out of habit, must not.
	Confirm    key.Binding
	ConfirmKey key.Binding
	Deny       key.Binding
	Apply      key.Binding
	NextField  key.Binding
	ToggleMode key.Binding
}

// DefaultKeyMap returns the console's keymap.
func DefaultKeyMap() KeyMap {
	b := func(keys []string, k, help string) key.Binding {
		return key.NewBinding(key.WithKeys(keys...), key.WithHelp(k, help))
	}
	return KeyMap{
		Quit: b([]string{"q", "ctrl+c"}, "q", "quit"),
		Help: b([]string{"?"}, "?", "help"),
		Back: b([]string{"esc"}, "esc", "back"),

		Up:       b([]string{"up", "k"}, "↑/k", "up"),
		Down:     b([]string{"down", "j"}, "↓/j", "down"),
		PageUp:   b([]string{"pgup", "ctrl+u"}, "pgup", "scroll up"),
		PageDown: b([]string{"pgdown", "ctrl+d"}, "pgdn", "scroll down"),
		Top:      b([]string{"home", "g"}, "g", "top"),
		Bottom:   b([]string{"end", "G"}, "G", "bottom"),

		Open:        b([]string{"enter"}, "enter", "open"),
		NextPage:    b([]string{"n", "]"}, "n", "next page"),
		PrevPage:    b([]string{"p", "["}, "p", "prev page"),
		Search:      b([]string{"/"}, "/", "search"),
		Filter:      b([]string{"f"}, "f", "filter"),
		ClearFilter: b([]string{"F"}, "F", "clear filters"),
		State:       b([]string{"s"}, "s", "state"),
		Sort:        b([]string{"o"}, "o", "sort"),
		Workers:     b([]string{"w"}, "w", "workers"),
		Limits:      b([]string{"L"}, "L", "limits"),
		Shares:      b([]string{"S"}, "S", "shares"),
		BulkRetry:   b([]string{"T"}, "T", "retry all dead"),
		BulkCancel:  b([]string{"X"}, "X", "cancel all"),
		Approvals:   b([]string{"a"}, "a", "approvals"),
		Waits:       b([]string{"W"}, "W", "waits"),

		Approve:     b([]string{"y"}, "y", "approve"),
		DenyRequest: b([]string{"d"}, "d", "deny"),
		Reason:      b([]string{"r"}, "r", "add a reason"),

		SendSignal: b([]string{"s"}, "s", "send signal"),
		EndWait:    b([]string{"e"}, "e", "end wait"),
		Payload:    b([]string{"p"}, "p", "edit the payload"),

		Replay:     b([]string{"r"}, "r", "replay"),
		Rerun:      b([]string{"R"}, "R", "re-run"),
		Cancel:     b([]string{"c"}, "c", "cancel"),
		Retry:      b([]string{"t"}, "t", "retry dead"),
		Compensate: b([]string{"u"}, "u", "compensate (undo)"),
		Resolve:    b([]string{"v"}, "v", "resolve"),
		Redeliver:  b([]string{"N"}, "N", "redeliver notifications"),

		NextTab: b([]string{"tab", "right", "l"}, "tab", "next tab"),
		PrevTab: b([]string{"shift+tab", "left", "h"}, "S-tab", "prev tab"),
		Expand:  b([]string{"enter", " "}, "enter", "expand"),

		Confirm:    b([]string{"y", "enter"}, "y/enter", "confirm"),
		ConfirmKey: b([]string{"y"}, "y", "confirm"),
		Deny:       b([]string{"n", "esc"}, "n/esc", "close"),
		Apply:      b([]string{"enter"}, "enter", "apply"),
		NextField:  b([]string{"tab", "shift+tab"}, "tab", "next field"),
		ToggleMode: b([]string{"tab"}, "tab", "done/retry"),
	}
}

// helpKeys adapts a view's short and full bindings to help.KeyMap.
type helpKeys struct {
	short []key.Binding
	full  [][]key.Binding
}

func (h helpKeys) ShortHelp() []key.Binding  { return h.short }
func (h helpKeys) FullHelp() [][]key.Binding { return h.full }

func (k KeyMap) tasksHelp() helpKeys {
	return helpKeys{
		short: []key.Binding{k.Open, k.Search, k.Filter, k.State, k.Approvals, k.Waits, k.NextPage, k.PrevPage, k.Replay, k.Workers, k.Help, k.Quit},
		full: [][]key.Binding{
			{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom},
			{k.Open, k.NextPage, k.PrevPage, k.Search, k.Filter, k.ClearFilter, k.State, k.Sort},
			{k.Replay, k.Rerun, k.Cancel, k.Retry, k.Compensate, k.Resolve, k.Redeliver, k.BulkRetry, k.BulkCancel},
			{k.Approvals, k.Waits, k.Workers, k.Limits, k.Shares, k.Help, k.Quit},
		},
	}
}

// taskHelp's short line offers the actions d's task allows now (all of
// them until it has loaded), their help shortened to hold in 100 columns;
// q is left to the full help (the journal's header says what enter does).
func (k KeyMap) taskHelp(d *Detail) helpKeys {
	short := []key.Binding{brief(k.NextTab, "tabs")}
	if d != nil && slices.ContainsFunc(d.Approvals, func(r approvals.Request) bool { return r.State == approvals.Pending }) {
		short = append(short, k.Approve, k.DenyRequest) // what the task waits for
	}
	if w := waitingOf(d); w != nil {
		if w.Kind == waits.KindSignal {
			short = append(short, k.SendSignal)
		}
		short = append(short, k.EndWait)
	}
	// Resolve comes first: a task that has an effect to resolve waits
	// for it, and a narrow line drops the last actions.
	for _, b := range []key.Binding{k.Resolve, k.Replay, k.Rerun, k.Cancel, brief(k.Retry, "retry"), brief(k.Compensate, "undo"),
		brief(k.Redeliver, "redeliver")} {
		if d == nil || k.allows(d, b) {
			short = append(short, b)
		}
	}
	return helpKeys{
		short: append(short, k.Back, k.Help),
		full: [][]key.Binding{
			{k.Up, k.Down, k.PageUp, k.PageDown, k.NextTab, k.PrevTab, k.Expand},
			{k.Replay, k.Rerun, k.Cancel, k.Retry, k.Compensate, k.Resolve, k.Redeliver},
			{k.Approve, k.DenyRequest, k.SendSignal, k.EndWait, k.Back, k.Help, k.Quit},
		},
	}
}

// brief is b with a shorter help text, for a short help line.
func brief(b key.Binding, help string) key.Binding {
	b.SetHelp(b.Help().Key, help)
	return b
}

// approvalsHelp is the approvals view's: the list's, or the page of a
// request (open), which offers a decision while it is pending.
func (k KeyMap) approvalsHelp(open, pending bool) helpKeys {
	short := []key.Binding{k.Open, k.Approve, k.DenyRequest, k.Up, k.Down, k.Back, k.Help, k.Quit}
	if open {
		short = []key.Binding{brief(k.PageDown, "scroll"), k.Back, k.Help, k.Quit}
		if pending {
			short = append([]key.Binding{k.Approve, k.DenyRequest}, short...)
		}
	}
	return helpKeys{
		short: short,
		full:  [][]key.Binding{{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom}, {k.Open, k.NextPage, k.PrevPage, k.Approve, k.DenyRequest, k.Back, k.Help, k.Quit}},
	}
}

// waitsHelp is the waits view's: the list's, or the page of a wait
// (open); the actions while the wait waits, s for a signal's only.
func (k KeyMap) waitsHelp(open bool, w *Wait) helpKeys {
	var acts []key.Binding
	if w != nil && w.State == waits.Waiting {
		if w.Kind == waits.KindSignal {
			acts = append(acts, k.SendSignal)
		}
		acts = append(acts, k.EndWait)
	}
	short := append(append([]key.Binding{k.Open}, acts...), k.Up, k.Down, k.Back, k.Help, k.Quit)
	if open {
		short = append(acts, brief(k.PageDown, "scroll"), k.Back, k.Help, k.Quit)
	}
	return helpKeys{
		short: short,
		full:  [][]key.Binding{{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom}, {k.Open, k.NextPage, k.PrevPage, k.SendSignal, k.EndWait, k.Back, k.Help, k.Quit}},
	}
}

func (k KeyMap) workersHelp() helpKeys {
	return helpKeys{
		short: []key.Binding{k.Up, k.Down, k.Back, k.Help, k.Quit},
		full:  [][]key.Binding{{k.Up, k.Down, k.Back, k.Help, k.Quit}},
	}
}

func (k KeyMap) limitsHelp() helpKeys {
	return helpKeys{
		short: []key.Binding{k.Up, k.Down, k.Workers, k.Back, k.Help, k.Quit},
		full:  [][]key.Binding{{k.Up, k.Down, k.PageUp, k.PageDown, k.Workers, k.Back, k.Help, k.Quit}},
	}
}

func (k KeyMap) sharesHelp() helpKeys {
	return helpKeys{
		short: []key.Binding{k.Up, k.Down, k.Limits, k.Back, k.Help, k.Quit},
		full:  [][]key.Binding{{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom}, {k.Limits, k.Workers, k.Back, k.Help, k.Quit}},
	}
}

func (k KeyMap) dialogHelp(d *dialogModel) helpKeys {
	keys := []key.Binding{k.Confirm, k.Deny}
	switch {
	case d.payload && d.editing:
		keys = []key.Binding{brief(k.Apply, "check the payload"), brief(k.Back, "back, payload unchanged")}
	case d.payload:
		keys = []key.Binding{brief(k.ConfirmKey, d.verb), k.Payload, k.Deny}
	case d.optional && d.editing:
		keys = []key.Binding{brief(k.Apply, d.verb+" with the reason"), brief(k.Back, "back, reason kept")}
	case d.optional && strings.TrimSpace(d.note.Value()) != "":
		keys = []key.Binding{brief(k.ConfirmKey, d.verb+" with the reason"), brief(k.Reason, "edit the reason"), k.Deny}
	case d.optional:
		keys = []key.Binding{brief(k.ConfirmKey, d.verb), k.Reason, k.Deny}
	case d.withNote && d.toggle:
		keys = []key.Binding{k.Apply, k.ToggleMode, k.Back}
	case d.withNote:
		keys = []key.Binding{brief(k.Apply, d.verb), k.Back}
	case d.danger:
		keys[0] = k.ConfirmKey
	}
	return helpKeys{short: keys, full: [][]key.Binding{keys}}
}

func (k KeyMap) inputHelp() helpKeys {
	keys := []key.Binding{k.Apply, k.NextField, k.Back}
	return helpKeys{short: keys, full: [][]key.Binding{keys}}
}

func (k KeyMap) searchHelp() helpKeys {
	keys := []key.Binding{k.Apply, k.Back}
	return helpKeys{short: keys, full: [][]key.Binding{keys}}
}
