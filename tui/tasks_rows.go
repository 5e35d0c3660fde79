package tui

import (
	"slices"
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/table"
	"github.com/sahilm/fuzzy"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/render"
)

// sortKey orders the loaded page.
type sortKey int

const (
	sortID      sortKey = iota // newest first, as loaded
	sortState                  // by state, in agentledger.TaskStates order
	sortUpdated                // most recently changed first
	sortKeys                   // how many keys there are
)

func (s sortKey) String() string {
	return [...]string{"id", "state", "updated"}[s]
}

// stateRank is a state's place in agentledger.TaskStates.
func stateRank(s agentledger.TaskState) int { return slices.Index(agentledger.TaskStates, s) }

// searchFields are the values of a task the search matches against: the
// cells the list shows.
func searchFields(t *agentledger.Task) []string {
	return []string{strconv.FormatInt(t.ID, 10), string(t.State), t.Tenant, t.Queue, t.Kind, lastErrorCell(t)}
}

// lastErrorCell is the list's DETAIL cell: what the task waits for,
// when it waits ("waiting for a daemon with tool open_ticket" says more
// than its last error), else its last error.
func lastErrorCell(t *agentledger.Task) string {
	if w := render.Waiting(t); w != "" {
		return oneLine(w)
	}
	return orDash(oneLine(render.BriefError(t.LastError)))
}

// searched returns the rows that match query, in their order: every word
// of the query must match one field of the task fuzzily (its letters in
// order, not necessarily adjacent), but for a word of digits alone: the
// start of a task id, as it is typed ("27" matches 27 and 270, where
// fuzzily it matched 227, 1207 and an error naming port 7247).
func searched(rows []*agentledger.Task, query string) []*agentledger.Task {
	words := strings.Fields(query)
	if len(words) == 0 {
		return rows
	}
	matches := func(t *agentledger.Task, fields []string, w string) bool {
		if strings.Trim(w, "0123456789") == "" {
			return strings.HasPrefix(fields[0], w)
		}
		return len(fuzzy.Find(w, fields)) > 0
	}
	var out []*agentledger.Task
	for _, t := range rows {
		fields := searchFields(t)
		if !slices.ContainsFunc(words, func(w string) bool { return !matches(t, fields, w) }) {
			out = append(out, t)
		}
	}
	return out
}

// sorted returns rows ordered by key; ties keep the newest first.
func sorted(rows []*agentledger.Task, by sortKey) []*agentledger.Task {
	out := slices.Clone(rows)
	slices.SortStableFunc(out, func(a, b *agentledger.Task) int {
		switch by {
		case sortState:
			if c := stateRank(a.State) - stateRank(b.State); c != 0 {
				return c
			}
		case sortUpdated:
			if c := b.UpdatedAt.Compare(a.UpdatedAt); c != 0 {
				return c
			}
		}
		switch {
		case a.ID > b.ID:
			return -1
		case a.ID < b.ID:
			return 1
		}
		return 0
	})
	return out
}

// apply searches and sorts the loaded page into the table, keeping the
// cursor on the task it was on.
func (m *tasksModel) apply() {
	var keep int64
	if t := m.selected(); t != nil {
		keep = t.ID
	}
	m.shown = sorted(searched(m.rows, m.search.Value()), m.sort)
	m.layout()
	rows := make([]table.Row, len(m.shown))
	for i, t := range m.shown {
		rows[i] = m.row(t)
	}
	m.table.SetRows(rows)
	for i, t := range m.shown {
		if t.ID == keep {
			moveTo(&m.table, i)
			return
		}
	}
	moveTo(&m.table, min(max(m.table.Cursor(), 0), max(len(rows)-1, 0)))
}
