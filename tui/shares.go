package tui

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/agentledger/agentledger/operator"
)

// sharesLegend says how to read the columns, and where they are set.
var sharesLegend = []string{"WEIGHT: parts of a claim round · CAP: most running across the fleet", "agentctl tenant share set changes them"}

// sharesModel is the shares view: each tenant's weight and cap on running
// tasks with how many of its tasks run now, the tenants held at their cap
// first.
type sharesModel struct {
	env    *env
	cmd    commands
	shares []operator.Share
	loadedPage
}

func newSharesModel(e *env, c commands) sharesModel {
	return sharesModel{env: e, cmd: c, loadedPage: newLoadedPage(e)}
}

// load reads the shares again.
func (m *sharesModel) load() tea.Cmd {
	m.loading = true
	return m.cmd.shares()
}

// refresh reloads unless a load is under way.
func (m *sharesModel) refresh() tea.Cmd {
	if m.loading {
		return nil
	}
	return m.load()
}

func (m *sharesModel) setSize(width, height int) {
	m.width = width // the table is laid out for the new width
	m.resize(width, height, m.table())
}

// Update handles the loads and scrolling.
func (m sharesModel) Update(msg tea.Msg) (sharesModel, tea.Cmd) {
	switch msg := msg.(type) {
	case sharesMsg:
		m.loading, m.err = false, msg.err
		if msg.err == nil {
			m.shares, m.loaded = heldFirst(msg.shares), true
			m.page.SetContent(m.table())
		}
		return m, nil
	case tea.KeyMsg:
		return m, m.scroll(msg)
	}
	return m, nil
}

// heldFirst orders the tenants at their cap first, each part by name:
// they are the ones whose queued tasks wait.
func heldFirst(shares []operator.Share) []operator.Share {
	out := slices.Clone(shares)
	slices.SortStableFunc(out, func(x, y operator.Share) int {
		switch {
		case x.AtCap() == y.AtCap():
			return strings.Compare(x.Tenant, y.Tenant)
		case x.AtCap():
			return -1
		}
		return 1
	})
	return out
}

// table renders a line per tenant, then the legend.
func (m sharesModel) table() string {
	s, now := m.env.styles, m.env.now()
	if len(m.shares) == 0 {
		if !m.loaded {
			return s.Dim.Render("loading…")
		}
		return s.Dim.Render("no tenant")
	}
	rows := [][]string{{"TENANT", "WEIGHT", "CAP", "RUNNING", "SOURCE", "UPDATED", "STATUS"}}
	for _, sh := range m.shares {
		capCell, source, updated := "-", "-", "-"
		if sh.MaxRunning != nil {
			capCell = strconv.Itoa(*sh.MaxRunning)
		}
		if sh.Source != nil {
			source, updated = *sh.Source, short(now.Sub(*sh.UpdatedAt))+" ago"
		}
		rows = append(rows, []string{sh.Tenant, strconv.Itoa(sh.Weight), capCell, strconv.FormatInt(sh.Running, 10), source, updated, m.status(sh)})
	}
	lines := grid(m.env, m.width, rows, "UPDATED", "SOURCE")
	if m.width > 0 && slices.ContainsFunc(lines, func(l string) bool { return ansi.StringWidth(l) > m.width }) {
		// Too wide even so (a long tenant name): each status goes on a
		// line of its own under its tenant, whole, rather than cut.
		last := len(rows[0]) - 1
		bare := make([][]string, len(rows))
		for i, r := range rows {
			bare[i] = r[:last]
		}
		lines = nil
		for i, l := range grid(m.env, m.width, bare, "UPDATED", "SOURCE") {
			lines = append(lines, l)
			if i > 0 && rows[i][last] != "" {
				lines = append(lines, "  └ "+rows[i][last])
			}
		}
	}
	lines = append(lines, "")
	for _, l := range sharesLegend {
		lines = append(lines, s.Dim.Render(l))
	}
	return cutLines(lines, m.width)
}

// status says what a tenant's cap does now: held at it, or over it (the
// cap was lowered below what ran), and how many tasks must end before a
// claim leases it another.
func (m sharesModel) status(sh operator.Share) string {
	if !sh.AtCap() {
		return ""
	}
	over := sh.Running - int64(*sh.MaxRunning)
	if over == 0 {
		return m.env.styles.Stale.Render("at its cap: none until one ends")
	}
	return m.env.styles.Stale.Render(fmt.Sprintf("over its cap by %d: none until %d end", over, over+1))
}

// View renders the totals and the table.
func (m sharesModel) View() string {
	var stored, capped, held int
	for _, sh := range m.shares {
		if sh.Source != nil {
			stored++
		}
		if sh.MaxRunning != nil {
			capped++
		}
		if sh.AtCap() {
			held++
		}
	}
	totals := fmt.Sprintf("%s · %d with a share stored · %d capped", plural(len(m.shares), "tenant"), stored, capped)
	if held > 0 {
		totals += " · " + m.env.styles.Stale.Render(fmt.Sprintf("%d at the cap", held))
	}
	if m.err != nil {
		totals += " · " + m.env.styles.Error.Render(m.err.Error())
	}
	return strings.Join([]string{cut(totals, m.width), "", fit(m.page.View(), m.width, max(m.height-2, 1))}, "\n")
}
