package main

import (
	"fmt"
	"io"
	"runtime"
	"sort"
	"strings"
	"time"
)

// Below these differences a figure counts as flat whatever its ratio: a
// p50 of 3 ms becoming 4 ms is noise, not growth.
const (
	flatLatency    = 5 * time.Millisecond
	flatRSS        = 16 << 20
	flatGoroutines = 20
	flatTable      = 1 << 20
)

// growth compares the mean of a figure over the first and the last third
// of the windows after the retention window's first turn.
type growth struct {
	Name        string
	First, Last float64
	Unit        string
	Floor       float64 // a rise below it is flat
}

func (g growth) growing(tol float64) bool {
	return g.Last-g.First > g.Floor && g.Last > g.First*(1+tol)
}

// verdict prints whether the load was sustained, whether latency, memory
// and tables stayed flat past the retention window, and what the fakes
// counted.
func verdict(out io.Writer, f LongdayFlags, r LongdayResult) {
	ws := r.Windows
	var done int
	for _, w := range ws {
		done += w.All.Finished
	}
	secs := time.Duration(len(ws)) * f.Window
	offered := float64(r.Offered) / max(r.Sent.Seconds(), 1e-9)
	completed := float64(done) / secs.Seconds()
	last := ws[len(ws)-1]
	fmt.Fprintf(out, "\n# verdict\n")
	sustained := offered >= 0.95*float64(f.Rate) && completed >= 0.95*offered && last.Backlog() < int64(f.Rate)*5
	if sustained {
		fmt.Fprintf(out, "load: sustained: %.0f tasks/s offered of %d, %.0f/s completed; backlog at the end %d; producer at most %s behind\n",
			offered, f.Rate, completed, last.Backlog(), r.MaxLag.Round(time.Millisecond))
	} else {
		fmt.Fprintf(out, "load: NOT SUSTAINED on this machine (%d CPUs): %d tasks/s asked, %.0f/s offered, %.0f/s completed; "+
			"backlog at the end %d tasks; producer at most %s behind\n",
			runtime.NumCPU(), f.Rate, offered, completed, last.Backlog(), r.MaxLag.Round(time.Millisecond))
	}

	turn := f.Retention + f.JanitorInterval
	var span []LongdayWindow
	for _, w := range ws {
		if w.Start >= turn {
			span = append(span, w)
		}
	}
	if len(span) < 3 {
		fmt.Fprintf(out, "growth: no verdict: only %d windows after the retention window's first turn (%s: retention and "+
			"one janitor interval); run longer than %s\n", len(span), turn, turn+3*f.Window)
	} else {
		third := len(span) / 3
		a, b := span[:third], span[len(span)-third:]
		mean := func(ws []LongdayWindow, v func(LongdayWindow) float64) float64 {
			s := 0.0
			for _, w := range ws {
				s += v(w)
			}
			return s / float64(len(ws))
		}
		g := func(name, unit string, floor float64, v func(LongdayWindow) float64) growth {
			return growth{Name: name, First: mean(a, v), Last: mean(b, v), Unit: unit, Floor: floor}
		}
		figs := []growth{
			g("p50", "ms", msFloat(flatLatency), func(w LongdayWindow) float64 { return msFloat(w.All.Lat.P50) }),
			g("p99", "ms", msFloat(flatLatency), func(w LongdayWindow) float64 { return msFloat(w.All.Lat.P99) }),
			g("agentd RSS", "MB", flatRSS/(1<<20), func(w LongdayWindow) float64 { return float64(w.RSS) / (1 << 20) }),
			g("agentd goroutines", "", flatGoroutines, func(w LongdayWindow) float64 { return float64(w.Goroutines) }),
		}
		for _, t := range ldTables {
			figs = append(figs, g(t, "MB", flatTable/(1<<20), func(w LongdayWindow) float64 { return float64(w.Tables[t].Total) / (1 << 20) }))
		}
		fmt.Fprintf(out, "growth: windows %s-%s against %s-%s (after the first turn at %s), tolerance %.0f%%:\n",
			a[0].Start, a[len(a)-1].Start+f.Window, b[0].Start, b[len(b)-1].Start+f.Window, turn, 100*f.Flat)
		if !sustained {
			fmt.Fprintln(out, "  (the load was not sustained: latency and sizes below grow with the backlog, not with history)")
		}
		var grew []string
		for _, x := range figs {
			word := "flat"
			if x.growing(f.Flat) {
				word = "GROWING"
				grew = append(grew, x.Name)
			}
			change := "n/a"
			if x.First > 0 {
				change = fmt.Sprintf("%+.0f%%", 100*(x.Last-x.First)/x.First)
			}
			fmt.Fprintf(out, "  %-18s %10.1f → %10.1f %-2s  %6s  %s\n", x.Name, x.First, x.Last, x.Unit, change, word)
		}
		if len(grew) == 0 {
			fmt.Fprintln(out, "growth: FLAT: latency, memory and every table held steady past the retention window")
		} else {
			fmt.Fprintf(out, "growth: GROWING: %s\n", strings.Join(grew, ", "))
		}
		var vac []string
		for _, t := range ldTables {
			s := last.Tables[t]
			vac = append(vac, fmt.Sprintf("%s %d (%d dead of %d)", t, s.Autovacuums, s.Dead, s.Live+s.Dead))
		}
		fmt.Fprintf(out, "autovacuum runs by the end: %s\n", strings.Join(vac, ", "))
	}

	// Nothing twice: the fakes' counts.
	c := r.Checks
	fmt.Fprintf(out, "effects: downstream %d business effects (%d requests; %d refused by design), the finished tasks account "+
		"for %d; bodies performed twice: %d\n", c.Effects, c.Hits, c.Refused, c.Expected, c.DupBodies)
	fmt.Fprintf(out, "slack: %d posts of the notify rule for %d notify tasks succeeded, posted twice: %d; %d approval requests posted; "+
		"model calls %d\n", c.Posts, c.Expected2, c.DupPosts, c.ApprovalPosts, c.ModelCalls)
	var classes []string
	for cl := range r.Finished {
		classes = append(classes, cl)
	}
	sort.Strings(classes)
	var fin []string
	for _, cl := range classes {
		s := fmt.Sprintf("%s %d", cl, r.Finished[cl])
		if n := r.Unexp[cl]; n > 0 {
			s += fmt.Sprintf(" (%d not %s)", n, expectedState(cl))
		}
		fin = append(fin, s)
	}
	fmt.Fprintf(out, "finished: %s\n", strings.Join(fin, ", "))
	fmt.Fprintf(out, "count: each finished task counted once; %d read again in a later window, %d finished a second time; "+
		"%d readings of the frontier behind the last\n", r.Reread, r.Refinished, r.Behind)
	if !r.Drained {
		fmt.Fprintf(out, "drain: NOT DRAINED within --drain %s; unfinished by state: %v\n", f.Drain, r.Left)
	} else if n := r.Left["needs_attention"]; n > 0 {
		fmt.Fprintf(out, "drain: %d tasks parked in needs_attention\n", n)
	}
	ok := c.DupBodies == 0 && c.DupPosts == 0
	exact := r.Drained && c.Effects == c.Expected && c.Posts == c.Expected2
	switch {
	case !ok:
		fmt.Fprintln(out, "once: DUPLICATE business effects or posts (see above)")
	case exact:
		fmt.Fprintln(out, "once: every business effect and post happened exactly once")
	default:
		fmt.Fprintln(out, "once: no effect or post happened twice; the counts differ from the finished tasks' (see above)")
	}
}
