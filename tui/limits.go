package tui

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/agentledger/agentledger/flow"
)

// limitsLegend says how to read the compact BREAKER cells.
const limitsLegend = "BREAKER: failures within a window, then the cool-down · STATE: the breaker's, shared by every daemon"

// limitsModel is the limits view: the fleet's limits (kind defaults and
// targets) with the state of their circuit breakers, the breakers tripped
// on targets without a limit of their own, then the concrete targets
// booked lately with when each lets its next call through.
type limitsModel struct {
	env      *env
	cmd      commands
	limits   []flow.Limit
	usage    []flow.Use
	breakers map[string]flow.BreakerState
	now      time.Time // the database's clock when the breakers were read
	loadedPage
}

func newLimitsModel(e *env, c commands) limitsModel {
	return limitsModel{env: e, cmd: c, loadedPage: newLoadedPage(e)}
}

// load reads the limits, their use and the breakers again.
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

func (m *limitsModel) setSize(width, height int) {
	m.width = width // the table is laid out for the new width
	m.resize(width, height, m.table())
}

// Update handles the loads and scrolling.
func (m limitsModel) Update(msg tea.Msg) (limitsModel, tea.Cmd) {
	switch msg := msg.(type) {
	case limitsMsg:
		m.loading, m.err = false, msg.err
		if msg.err == nil {
			m.limits, m.usage, m.now, m.loaded = msg.limits, msg.usage, msg.now, true
			m.breakers = make(map[string]flow.BreakerState, len(msg.breakers))
			for _, b := range msg.breakers {
				m.breakers[b.Target] = b
			}
			m.page.SetContent(m.table())
		}
		return m, nil
	case tea.KeyMsg:
		return m, m.scroll(msg)
	}
	return m, nil
}

// table renders the limits, the tripped breakers of targets without a
// limit, the targets booked lately and the legend.
func (m limitsModel) table() string {
	s := m.env.styles
	if !m.loaded {
		return s.Dim.Render("loading…")
	}
	var lines []string
	if len(m.limits) == 0 {
		none := "no limits: every target unpaced"
		if len(m.trippedElsewhere()) > 0 {
			none = "no limits: no target is paced, but the breakers below hold their targets' calls"
		}
		lines = append(lines, s.Dim.Render(none))
	} else {
		// STATE comes second: on a narrow terminal the breakers' states
		// stay in view.
		rows := [][]string{{"TARGET", "STATE", "RATE", "BURST", "CONCURRENCY", "TOKENS", "BREAKER", "SOURCE"}}
		for _, l := range m.limits {
			burst, conc := "", ""
			if !l.Rate.IsZero() {
				burst = strconv.Itoa(l.Burst)
			}
			if l.Concurrency > 0 {
				conc = strconv.Itoa(l.Concurrency)
			}
			rows = append(rows, []string{l.Target, m.limitState(l), orDash(l.Rate.String()), orDash(burst), orDash(conc),
				orDash(l.Tokens.String()), orDash(breakerConf(l.Breaker)), l.Source})
		}
		// A limit's own breaker that is not closed says why under its row,
		// whole, as the tripped ones below do in a column.
		for i, l := range grid(m.env, m.width, rows, "SOURCE", "TOKENS", "CONCURRENCY", "BURST") {
			lines = append(lines, l)
			if i == 0 {
				continue
			}
			if b, ok := m.breakers[m.limits[i-1].Target]; ok && b.State != flow.Closed && b.LastError != "" {
				lines = append(lines, "  └ last error: "+oneLine(b.LastError))
			}
		}
	}
	if tripped := m.trippedElsewhere(); len(tripped) > 0 {
		rows := [][]string{{"TRIPPED BREAKER", "STATE", "LAST ERROR"}}
		for _, b := range tripped {
			rows = append(rows, []string{b.Target, m.breakerState(b), orDash(b.LastError)})
		}
		lines = append(lines, "")
		lines = append(lines, grid(m.env, m.width, rows)...)
	}
	if len(m.usage) > 0 {
		// A target is what agentctl limit rm takes: never cut.
		w := []int{len("BOOKED LATELY"), len("UNDER LIMIT")}
		for _, u := range m.usage {
			w[0], w[1] = max(w[0], ansi.StringWidth(u.Target)), max(w[1], ansi.StringWidth(orDash(u.Limit)))
		}
		w[0], w[1] = w[0]+1, w[1]+1 // two spaces apart
		lines = append(lines, "", s.Bold.Render(columns(w, "BOOKED LATELY", "UNDER LIMIT", "NEXT CALL")))
		for _, u := range m.usage {
			next := "free"
			switch b, ok := m.breakers[u.Target]; {
			case ok && b.State != flow.Closed:
				// The rate's slot is free, but the breaker holds the call.
				next = s.Stale.Render("breaker " + m.breakerState(b))
			case u.Cap > 0 && u.InFlight >= u.Cap:
				next = s.Stale.Render(fmt.Sprintf("cap full: %d in flight", u.InFlight))
			case u.Wait > 0:
				next = s.Stale.Render("next slot in " + soon(u.Wait))
			case u.InFlight > 0:
				next = fmt.Sprintf("free (%d in flight)", u.InFlight)
			}
			lines = append(lines, columns(w, u.Target, orDash(u.Limit), next))
		}
	}
	if len(m.limits) > 0 {
		lines = append(lines, "", s.Dim.Render(limitsLegend))
	}
	return cutLines(lines, m.width)
}

// limitState is the STATE cell of a limit: its target's breaker, or for a
// kind's default how many of the targets it covers are not closed.
func (m limitsModel) limitState(l flow.Limit) string {
	if l.Target == flow.KindDefault(kindOf(l.Target)) {
		n := 0
		for _, b := range m.trippedElsewhere() {
			if kindOf(b.Target) == kindOf(l.Target) {
				n++
			}
		}
		switch {
		case n > 0:
			return m.env.styles.Stale.Render(fmt.Sprintf("%d open", n))
		case l.Breaker != nil:
			return "all closed"
		}
		return "-"
	}
	if b, ok := m.breakers[l.Target]; ok {
		return m.breakerState(b)
	}
	if l.Breaker != nil {
		return flow.Closed
	}
	return "-"
}

// breakerState says what a breaker does now: "closed", "open until
// 12:04:31", "half-open" (one call probes), "opened by operator".
func (m limitsModel) breakerState(b flow.BreakerState) string {
	var text string
	switch b.State {
	case flow.Closed:
		return flow.Closed
	case flow.HalfOpen:
		text = "half-open"
	case flow.Open:
		text = "open"
		if b.Manual {
			text = "opened by operator"
		}
		if b.OpenUntil != nil {
			text += " until " + m.clock(*b.OpenUntil)
		}
	default:
		text = b.State
	}
	return m.env.styles.Stale.Render(text)
}

// clock is a time of day in the console's location, with the date when
// it is not within the day ahead.
func (m limitsModel) clock(t time.Time) string {
	if d := t.Sub(m.now); d < 0 || d > 20*time.Hour {
		return m.env.stamp(t)
	}
	return t.In(m.env.opts.Location).Format("15:04:05")
}

// trippedElsewhere are the breakers not closed whose target has no limit
// of its own (a kind's default covers it, or an operator opened it), by
// target.
func (m limitsModel) trippedElsewhere() []flow.BreakerState {
	own := make(map[string]bool, len(m.limits))
	for _, l := range m.limits {
		own[l.Target] = true
	}
	var out []flow.BreakerState
	for _, b := range m.breakers {
		if b.State != flow.Closed && !own[b.Target] {
			out = append(out, b)
		}
	}
	slices.SortFunc(out, func(a, b flow.BreakerState) int { return strings.Compare(a.Target, b.Target) })
	return out
}

// tripped counts the breakers not closed.
func (m limitsModel) tripped() int {
	n := 0
	for _, b := range m.breakers {
		if b.State != flow.Closed {
			n++
		}
	}
	return n
}

// breakerConf is a breaker's configuration, compact: "5 in 60s, 30s" (5
// failures within 60s open it for a cool-down of 30s).
func breakerConf(b *flow.Breaker) string {
	if b == nil {
		return ""
	}
	return fmt.Sprintf("%d in %s, %s", b.Failures, flow.Span(b.Window), flow.Span(b.Cooldown))
}

// kindOf is the kind of a stored, normalised target.
func kindOf(target string) string {
	kind, _, _ := strings.Cut(target, ":")
	return kind
}

// View renders the totals and the tables.
func (m limitsModel) View() string {
	// "the last hour" is flow.UsageWindow.
	totals := fmt.Sprintf("%s · %s booked in the last hour", plural(len(m.limits), "limit"), plural(len(m.usage), "target"))
	if n := m.tripped(); n > 0 {
		totals += " · " + m.env.styles.Stale.Render(plural(n, "breaker")+" not closed")
	}
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
