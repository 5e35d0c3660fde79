package main

import (
	"strings"
	"testing"
)

func TestServerCountersReport(t *testing.T) {
	a := &serverCounters{commits: 100, walRecords: 1000, walFPI: 10, walBytes: 1e5, walSyncs: 50,
		tables: map[string]tableCounters{"tasks": {ins: 10, upd: 20, hot: 0}, "idle": {ins: 5}}}
	b := &serverCounters{commits: 300, walRecords: 2600, walFPI: 30, walBytes: 4e5, walSyncs: 200,
		tables: map[string]tableCounters{"tasks": {ins: 110, upd: 220, hot: 50, autovacuums: 1}, "idle": {ins: 5}}}
	var w strings.Builder
	b.report(&w, a, 100)
	got := w.String()
	for _, want := range []string{
		"commits 2.00/task", "WAL 16.00 records, 0.200 full-page images, 3000 bytes per task", "150 syncs (1.50/task)",
		"tasks ins 1.00 upd 2.00 (HOT 25%) del 0.00 /task, autovacuum 1, autoanalyze 0",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "idle") {
		t.Errorf("a table that did not change is listed:\n%s", got)
	}
}

func TestPIDReport(t *testing.T) {
	s := serverSnap{procs: map[int]procCPU{
		12: {kind: "client agentbench-worker"}, 9: {kind: "client agentbench-worker"}, 3: {kind: "walwriter"},
	}}
	if got, want := pidReport(s), "client agentbench-worker 9,12; walwriter 3"; got != want {
		t.Errorf("pidReport = %q, want %q", got, want)
	}
}
