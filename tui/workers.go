package tui

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/agentledger/agentledger/operator"
	"github.com/agentledger/agentledger/render"
)

// workersModel is the workers view: the live leases per worker, how long
// ago each renewed one, the stale ones highlighted, and what each
// announced it serves. The root also reads it to say when no worker is
// live.
type workersModel struct {
	env     *env
	cmd     commands
	workers []operator.Worker
	loadedPage
}

func newWorkersModel(e *env, c commands) workersModel {
	return workersModel{env: e, cmd: c, loadedPage: newLoadedPage(e)}
}

// load reads the workers again.
func (m *workersModel) load() tea.Cmd {
	m.loading = true
	return m.cmd.workers()
}

// refresh reloads unless a load is under way.
func (m *workersModel) refresh() tea.Cmd {
	if m.loading {
		return nil
	}
	return m.load()
}

func (m *workersModel) setSize(width, height int) { m.resize(width, height, m.table()) }

// stale reports whether a worker looks dead or stalled: a lease of its ran
// out, or it renewed none for longer than Options.StaleAfter.
func (m workersModel) stale(w operator.Worker) bool {
	return w.Expired > 0 || m.env.now().Sub(w.LastHeartbeat) > m.env.opts.StaleAfter
}

// Update handles the loads and scrolling.
func (m workersModel) Update(msg tea.Msg) (workersModel, tea.Cmd) {
	switch msg := msg.(type) {
	case workersMsg:
		m.loading, m.err = false, msg.err
		if msg.err == nil {
			m.workers, m.loaded = msg.workers, true
			m.page.SetContent(m.table())
		}
		return m, nil
	case tea.KeyMsg:
		return m, m.scroll(msg)
	}
	return m, nil
}

// live counts the workers that are not stale; ok is false until the
// workers loaded, or while their last load failed.
func (m workersModel) live() (n int, ok bool) {
	for _, w := range m.workers {
		if !m.stale(w) {
			n++
		}
	}
	return n, m.loaded && m.err == nil
}

// table renders two lines per worker, its leases then what it announced,
// and a third with what it can run beyond its kinds when it said.
func (m workersModel) table() string {
	s, now := m.env.styles, m.env.now()
	if len(m.workers) == 0 {
		if !m.loaded {
			return s.Dim.Render("loading…")
		}
		return s.Dim.Render("no worker is running, and no lease is held")
	}
	// WORKER is as wide as the longest id (host-pid ids are ~15 cells),
	// up to 30, so that STATUS keeps its room at 80 columns.
	w := []int{len("WORKER"), 6, 10, 12, 8}
	for _, wk := range m.workers {
		w[0] = min(max(w[0], ansi.StringWidth(wk.ID)), 30)
	}
	lines := []string{s.Bold.Render(columns(w, "WORKER", "TASKS", "HEARTBEAT", "NEXT EXPIRY", "EXPIRED", "STATUS"))}
	for _, wk := range m.workers {
		status := "ok"
		if m.stale(wk) {
			status = s.Stale.Render("STALE")
			if !wk.PruneAt.IsZero() && wk.PruneAt.After(now) {
				status += s.Stale.Render(", pruned in " + short(wk.PruneAt.Sub(now)))
			}
			if wk.Expired > 0 {
				status += s.Stale.Render(fmt.Sprintf(": %d lease(s) ran out, claimable again", wk.Expired))
			}
		}
		lines = append(lines, columns(w, wk.ID, strconv.FormatInt(wk.Tasks, 10), short(now.Sub(wk.LastHeartbeat))+" ago",
			expiry(wk.NextExpiry, now), strconv.FormatInt(wk.Expired, 10), status))
		for _, l := range wrapUnder("  ", announced(wk, now.Sub(wk.LastHeartbeat) > m.env.opts.StaleAfter), m.width) {
			lines = append(lines, s.Dim.Render(l))
		}
		if c := render.Capabilities(wk.Caps); c != "" {
			for _, l := range wrapUnder("  runs: ", c, m.width) {
				lines = append(lines, s.Dim.Render(l))
			}
		}
	}
	return cutLines(lines, m.width)
}

// announced says what a worker serves: its queues, kinds and MCP servers;
// silent says it has not announced itself for a while, so that its
// servers' states are what it last reported, not what they are.
func announced(w operator.Worker, silent bool) string {
	if w.StartedAt.IsZero() {
		return "queues and kinds not announced: it only holds leases"
	}
	parts := []string{"queues " + orDash(strings.Join(w.Queues, ", ")), "kinds " + orDash(strings.Join(w.Kinds, ", "))}
	if len(w.MCPServers) > 0 {
		names := make([]string, 0, len(w.MCPServers))
		for name := range w.MCPServers {
			names = append(names, name)
		}
		slices.Sort(names)
		for i, name := range names {
			names[i] = name + " " + w.MCPServers[name]
		}
		mcp := "MCP "
		if silent {
			mcp = "MCP last reported "
		}
		parts = append(parts, mcp+strings.Join(names, ", "))
	}
	return strings.Join(parts, " · ")
}

// View renders the totals and the table.
func (m workersModel) View() string {
	var tasks, stale int64
	for _, w := range m.workers {
		tasks += w.Tasks
		if m.stale(w) {
			stale++
		}
	}
	totals := fmt.Sprintf("%s holding %s", plural(len(m.workers), "worker"), plural(int(tasks), "lease"))
	if stale > 0 {
		totals += " · " + m.env.styles.Stale.Render(fmt.Sprintf("%d stale", stale))
	}
	if m.err != nil {
		totals += " · " + m.env.styles.Error.Render(m.err.Error())
	}
	return strings.Join([]string{cut(totals, m.width), "", fit(m.page.View(), m.width, max(m.height-2, 1))}, "\n")
}
