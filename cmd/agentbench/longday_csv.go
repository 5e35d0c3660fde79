package main

import (
	"encoding/csv"
	"os"
	"strconv"
	"time"
)

// longdayCSV writes a long day's windows to a CSV file as they end.
type longdayCSV struct {
	f *os.File
	w *csv.Writer
}

func newLongdayCSV(path string) (*longdayCSV, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	s := &longdayCSV{f: f, w: csv.NewWriter(f)}
	h := []string{"elapsed_s", "window_s", "offered_per_s", "completed_per_s", "p50_ms", "p99_ms", "unexpected",
		"backlog", "waiting", "needs_attention", "outbox_pending", "agentd_rss_mb", "agentd_goroutines", "agentd_cores", "pg_cores", "harness_cores", "harness_gc_cores", "harness_heap_mb", "other_cores",
		"janitor_deleted", "cron_fired", "approvals_decided", "signals_sent"}
	for _, c := range allClasses {
		h = append(h, c+"_done", c+"_p50_ms", c+"_p99_ms")
	}
	for _, t := range ldTables {
		h = append(h, t+"_total_mb", t+"_index_mb", t+"_live", t+"_dead", t+"_autovacuums", t+"_last_autovacuum")
	}
	_ = s.w.Write(h)
	s.w.Flush()
	return s, s.w.Error()
}

// Write appends one window and flushes it.
func (s *longdayCSV) Write(w LongdayWindow) error {
	secs := w.Len.Seconds()
	num := func(v float64, prec int) string { return strconv.FormatFloat(v, 'f', prec, 64) }
	i64 := func(v int64) string { return strconv.FormatInt(v, 10) }
	mbs := func(b int64) string { return num(float64(b)/(1<<20), 2) }
	cores := func(d time.Duration) string { return num(d.Seconds()/secs, 2) }
	pg, other := "", ""
	if w.CPU.ServerKnown {
		pg = cores(w.CPU.Server)
		if w.CPU.MachineKnown { // the rest of the machine: other users of the shared cores
			other = cores(max(w.CPU.Machine-w.CPU.Self-w.CPU.Server-w.AgentdCPU, 0))
		}
	}
	gor := ""
	if w.Goroutines >= 0 {
		gor = i64(w.Goroutines)
	}
	row := []string{num((w.Start + w.Len).Seconds(), 0), num(secs, 1), num(float64(w.Offered)/secs, 1),
		num(float64(w.All.Finished)/secs, 1), ms(w.All.Lat.P50), ms(w.All.Lat.P99), strconv.Itoa(w.All.Unexpected),
		i64(w.Backlog()), i64(w.Unfinished["waiting"]), i64(w.Unfinished["needs_attention"]),
		i64(w.OutboxPending), mbs(w.RSS), gor,
		cores(w.AgentdCPU), pg, cores(w.CPU.Self), cores(w.HarnessGC), mbs(w.HarnessHeap), other, i64(w.Deleted), i64(w.Cron), i64(w.Decided), i64(w.Signalled)}
	for _, c := range allClasses {
		cw := w.ByClass[c]
		p50, p99 := "", ""
		if cw.Finished > 0 {
			p50, p99 = ms(cw.Lat.P50), ms(cw.Lat.P99)
		}
		row = append(row, strconv.Itoa(cw.Finished), p50, p99)
	}
	for _, t := range ldTables {
		ts := w.Tables[t]
		last := ""
		if !ts.LastAutovacuum.IsZero() {
			last = ts.LastAutovacuum.UTC().Format(time.RFC3339)
		}
		row = append(row, mbs(ts.Total), mbs(ts.Indexes), i64(ts.Live), i64(ts.Dead), i64(ts.Autovacuums), last)
	}
	_ = s.w.Write(row)
	s.w.Flush()
	return s.w.Error()
}

// Close closes the file.
func (s *longdayCSV) Close() error { return s.f.Close() }

// serverCores is PostgreSQL's CPU in the measurement, in cores; "?" unknown.
func (u CPUUse) serverCores() string {
	if !u.ServerKnown || u.Wall <= 0 {
		return "?"
	}
	return strconv.FormatFloat(u.Server.Seconds()/u.Wall.Seconds(), 'f', 2, 64)
}
