package tui

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/agentledger/agentledger/flow"
)

// limitsFooter says what the view does not show yet.
const limitsFooter = "rate limits only: concurrency caps and circuit breakers come later"

// limitsModel is the limits view: the fleet's rate limits (kind defaults
// and targets), then the concrete targets booked lately with when each
// lets its next call through.
type limitsModel struct {
	env    *env
	cmd    commands
	limits []flow.Limit
	usage  []flow.Use
	loadedPage
}

func newLimitsModel(e *env, c commands) limitsModel {
	return limitsModel{env: e, cmd: c, loadedPage: newLoadedPage(e)}
}

// load reads the limits and their use again.
func (m *limitsModel) load() tea.Cmd {
	m.loading = true
	return m.cmd.limits()
}

// refresh reloads unless a load is under way.
func (m *limitsModel) refresh() tea.Cmd {
	if m.loading {
		return nil
	}
	return m.load()
}

func (m *limitsModel) setSize(width, height int) { m.resize(width, height, m.table()) }

// Update handles the loads and scrolling.
func (m limitsModel) Update(msg tea.Msg) (limitsModel, tea.Cmd) {
	switch msg := msg.(type) {
	case limitsMsg:
		m.loading, m.err = false, msg.err
		if msg.err == nil {
			m.limits, m.usage, m.loaded = msg.limits, msg.usage, true
			m.page.SetContent(m.table())
		}
		return m, nil
	case tea.KeyMsg:
		return m, m.scroll(msg)
	}
	return m, nil
}

// table renders the limits, the targets booked lately and the footer.
func (m limitsModel) table() string {
	s := m.env.styles
	if !m.loaded {
		return s.Dim.Render("loading…")
	}
	var lines []string
	if len(m.limits) == 0 {
		lines = append(lines, s.Dim.Render("no limits: every target unpaced"))
	} else {
		w := []int{44, 10, 6}
		lines = append(lines, s.Bold.Render(columns(w, "TARGET", "RATE", "BURST", "SOURCE")))
		for _, l := range m.limits {
			lines = append(lines, columns(w, l.Target, l.Rate.String(), strconv.Itoa(l.Burst), l.Source))
		}
	}
	if len(m.usage) > 0 {
		w := []int{44, 26}
		lines = append(lines, "", s.Bold.Render(columns(w, "BOOKED LATELY", "UNDER LIMIT", "NEXT CALL")))
		for _, u := range m.usage {
			next := "free"
			if u.Wait > 0 {
				next = s.Stale.Render("next slot in " + soon(u.Wait))
			}
			lines = append(lines, columns(w, u.Target, orDash(u.Limit), next))
		}
	}
	lines = append(lines, "", s.Dim.Render(limitsFooter))
	return cutLines(lines, m.width)
}

// View renders the totals and the tables.
func (m limitsModel) View() string {
	// "the last hour" is flow.UsageWindow.
	totals := fmt.Sprintf("%s · %s booked in the last hour", plural(len(m.limits), "limit"), plural(len(m.usage), "target"))
	if m.err != nil {
		totals += " · " + m.env.styles.Error.Render(m.err.Error())
	}
	return strings.Join([]string{cut(totals, m.width), "", fit(m.page.View(), m.width, max(m.height-2, 1))}, "\n")
}

// soon formats a short wait up to the next tenth of a second ("1.2s"),
// so that a wait never shows as 0; a longer one to the second ("1m30s").
func soon(d time.Duration) string {
	if d < 10*time.Second {
		return strconv.FormatFloat(math.Ceil(d.Seconds()*10)/10, 'f', 1, 64) + "s"
	}
	return d.Round(time.Second).String()
}
