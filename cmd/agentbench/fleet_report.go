package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ratio formats a/b with one decimal; "-" when b is 0.
func ratio(a, b int64) string {
	if b == 0 {
		return "-"
	}
	return strconv.FormatFloat(float64(a)/float64(b), 'f', 1, 64)
}

// loadAverage is the machine's load average over 1, 5 and 15 minutes, or
// "?".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "?"
}

// cells formats the result as a row of the rounds' table.
func (r FleetResult) cells(f FleetFlags) []any {
	c := r.Case
	secs, rate, steady := fmt.Sprintf("%.2f", r.Elapsed.Seconds()), fmt.Sprintf("%.0f", r.Rate), fmt.Sprintf("%.0f", r.Steady)
	start, tail := fmt.Sprintf("%.2f", r.Start.Seconds()), fmt.Sprintf("%.2f", r.Tail.Seconds())
	if r.TimedOut {
		secs, start, tail, rate, steady = "-", "-", "-", "timeout", "-"
	}
	cores := func(d time.Duration) string { return strconv.FormatFloat(d.Seconds()/r.Wall.Seconds(), 'f', 2, 64) }
	per := func(d time.Duration) string {
		return strconv.FormatFloat(float64(d)/float64(time.Microsecond)/float64(f.Tasks), 'f', 1, 64)
	}
	pgCores, pgPer := "?", "?"
	if r.CPUKnown {
		pgCores, pgPer = cores(r.ServerCPU), per(r.ServerCPU)
	}
	once := "yes"
	switch {
	case r.TimedOut:
		once = "-"
	case r.OnceFailed != "":
		once = "NO"
	}
	return []any{r.Round, c.label(), f.Concurrency / c.Daemons, secs, start, tail, rate, steady, cores(r.DaemonCPU), pgCores,
		per(r.DaemonCPU), pgPer, ratio(r.Attempts, r.Claims), ratio(r.Attempts, r.Completes), r.Activity.PeakPerDaemon, r.Activity.PeakTotal, r.Deadlocks, r.Rollbacks,
		r.Conflicts, r.Attempts, once}
}

// medianMinMax formats xs as "median (min–max)".
func medianMinMax(xs []float64, prec int) string {
	if len(xs) == 0 {
		return "-"
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	fm := func(x float64) string { return strconv.FormatFloat(x, 'f', prec, 64) }
	return fmt.Sprintf("%s (%s–%s)", fm(m), fm(s[0]), fm(s[len(s)-1]))
}

// printFleetSummary prints each case's medians and the ratio of each
// fleet case to one daemon, per round and over the rounds.
func printFleetSummary(out io.Writer, cases []FleetCase, results map[FleetCase][]FleetResult, tasks int) {
	t := NewTable("case", "runs", "tasks/s median (min–max)", "steady/s", "agentd us/task", "pg us/task", "conns/daemon", "backends")
	for _, c := range cases {
		var rate, steady, dcpu, pcpu, conns, backends []float64
		for _, r := range results[c] {
			if r.TimedOut {
				continue
			}
			rate = append(rate, r.Rate)
			steady = append(steady, r.Steady)
			n := float64(tasks)
			dcpu = append(dcpu, float64(r.DaemonCPU)/float64(time.Microsecond)/n)
			if r.CPUKnown {
				pcpu = append(pcpu, float64(r.ServerCPU)/float64(time.Microsecond)/n)
			}
			conns = append(conns, float64(r.Activity.PeakPerDaemon))
			backends = append(backends, float64(r.Activity.PeakTotal))
		}
		t.Add(c.label(), len(rate), medianMinMax(rate, 0), medianMinMax(steady, 0), medianMinMax(dcpu, 1), medianMinMax(pcpu, 1),
			medianMinMax(conns, 0), medianMinMax(backends, 0))
	}
	t.Print(out)
	fmt.Fprintln(out)
	printFleetRatios(out, cases, results, "", func(r FleetResult) float64 { return r.Rate })
	fmt.Fprintln(out)
	printFleetRatios(out, cases, results, " (steady)", func(r FleetResult) float64 { return r.Steady })
}

// printFleetRatios prints the ratio of each fleet case's rate to one
// daemon's, per round and over the rounds.
func printFleetRatios(out io.Writer, cases []FleetCase, results map[FleetCase][]FleetResult, what string, rate func(FleetResult) float64) {
	one := results[cases[0]]
	header := []string{"round"}
	for _, c := range cases[1:] {
		header = append(header, c.label()+" / "+cases[0].label()+what)
	}
	rt := NewTable(header...)
	ratios := make([][]float64, len(cases)-1)
	for i := range one {
		row := []any{one[i].Round}
		for j, c := range cases[1:] {
			rs := results[c]
			if i >= len(rs) || rs[i].TimedOut || one[i].TimedOut {
				row = append(row, "-")
				continue
			}
			q := rate(rs[i]) / rate(one[i])
			ratios[j] = append(ratios[j], q)
			row = append(row, fmt.Sprintf("%.2f", q))
		}
		rt.Add(row...)
	}
	row := []any{"median (min–max)"}
	for _, q := range ratios {
		row = append(row, medianMinMax(q, 2))
	}
	rt.Add(row...)
	rt.Print(out)
}

// printFleetWaits prints, per case over all its rounds, what the daemons'
// backends were doing in the pg_stat_activity samples, then which
// statements waited on heavyweight locks.
func printFleetWaits(out io.Writer, cases []FleetCase, results map[FleetCase][]FleetResult) {
	samples := make([]int, len(cases))
	for i, c := range cases {
		for _, r := range results[c] {
			samples[i] += r.Activity.Samples
		}
	}
	fmt.Fprintf(out, "# the daemons' backends in pg_stat_activity, sampled every 50ms during the burn-downs "+
		"(wait_event_type/wait_event of active backends, CPU: active with no wait event; other states in brackets); "+
		"backend-samples and share per case\n")
	printCounts(out, cases, samples, results, func(a ActivityReport) map[string]int { return a.Waits })
	fmt.Fprintf(out, "\n# of those, the backends waiting on a heavyweight lock (wait_event_type Lock): their statement, the lock "+
		"and the statement of the first backend blocking them (pg_blocking_pids; a blocker idle in transaction shows its last statement)\n")
	printCounts(out, cases, samples, results, func(a ActivityReport) map[string]int { return a.LockWaits })
}

// printCounts prints a table of counts per case, most frequent first,
// with each count's share of its case's total.
func printCounts(out io.Writer, cases []FleetCase, samples []int, results map[FleetCase][]FleetResult,
	counts func(ActivityReport) map[string]int) {
	totals := make([]map[string]int, len(cases))
	keys := map[string]int{}
	for i, c := range cases {
		totals[i] = map[string]int{}
		for _, r := range results[c] {
			for k, n := range counts(r.Activity) {
				totals[i][k] += n
				keys[k] += n
			}
		}
	}
	header := []string{"what"}
	for i, c := range cases {
		header = append(header, fmt.Sprintf("%s (%d samples)", c.label(), samples[i]), "share")
	}
	t := NewTable(header...)
	order := make([]string, 0, len(keys))
	for k := range keys {
		order = append(order, k)
	}
	slices.SortFunc(order, func(a, b string) int {
		if keys[a] != keys[b] {
			return keys[b] - keys[a]
		}
		return strings.Compare(a, b)
	})
	for _, k := range order {
		row := []any{k}
		for i := range cases {
			sum := 0
			for _, n := range totals[i] {
				sum += n
			}
			row = append(row, totals[i][k], fmt.Sprintf("%.1f%%", 100*float64(totals[i][k])/float64(max(sum, 1))))
		}
		t.Add(row...)
	}
	if len(order) == 0 {
		row := []any{"none"}
		for range cases {
			row = append(row, 0, "-")
		}
		t.Add(row...)
	}
	t.Print(out)
}
