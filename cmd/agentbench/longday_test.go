package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger/internal/test/testdb"
)

// A tiny long day: every class runs through agentd, built from this
// checkout, against the fakes; the verdict, the CSV and the charts come
// out, and nothing happened twice. No rate is asserted.
func TestLongdaySmoke(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	csvPath := filepath.Join(dir, "day.csv")
	out := runBench(t, "longday", "--database-url", testdb.URL(t), "--rate", "40", "--duration", "9s", "--window", "1s",
		"--mix", "steps=4,agent=2,notify=2,saga=2,approve=4,signal=2,timer=2", "--retention", "4s",
		"--janitor-interval", "1s", "--cron", "@every 1s", "--decide-after", "100ms", "--signal-after", "100ms",
		"--drain", "1m", "--concurrency", "20", "--max-conns", "6", "--autovacuum", "tuned", "--csv", csvPath)
	for _, want := range []string{
		"once: every business effect and post happened exactly once",
		"bodies performed twice: 0", "posted twice: 0", " 0 finished a second time",
		"growth: windows ", // nine windows, four of them after the first turn at 5s
	} {
		if !strings.Contains(out, want) {
			t.Errorf("want %q in the output:\n%s", want, out)
		}
	}
	fin := ""
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "finished: ") {
			fin = l
		}
	}
	for _, c := range allClasses {
		if !strings.Contains(fin, c+" ") || strings.Contains(fin, c+" 0") || strings.Contains(fin, "not ") {
			t.Errorf("want tasks of class %s finished as expected: %q", c, fin)
		}
	}
	b, err := os.ReadFile(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 10 || !strings.HasPrefix(lines[0], "elapsed_s,window_s,offered_per_s,completed_per_s,p50_ms,p99_ms,") ||
		!strings.Contains(lines[0], "ledger_total_mb,ledger_index_mb,") {
		t.Errorf("want a CSV header and 9 windows:\n%s", b)
	}
	rss := strings.Index(lines[0], "agentd_rss_mb")
	if rss < 0 || len(lines) < 2 {
		t.Fatalf("no agentd_rss_mb column:\n%s", b)
	}
	col := strings.Count(lines[0][:rss], ",")
	if f := strings.Split(lines[1], ","); f[col] == "" || f[col] == "0.00" || f[col+1] == "" {
		t.Errorf("want agentd's RSS and goroutines in the first window: %s", lines[1])
	}
	// The janitor deleted finished tasks (retention 4s) and cron fired, as
	// agentd's /metrics counted.
	sum := func(column string) int {
		i := slices.Index(strings.Split(lines[0], ","), column)
		n := 0
		for _, l := range lines[1:] {
			v, _ := strconv.Atoi(strings.Split(l, ",")[i])
			n += v
		}
		return n
	}
	if sum("janitor_deleted") == 0 || sum("cron_fired") == 0 {
		t.Errorf("want rows the janitor deleted and cron fires in the windows:\n%s", b)
	}
	for _, name := range []string{"throughput", "latency", "daemon", "tables"} {
		if b, err := os.ReadFile(filepath.Join(dir, "day-"+name+".svg")); err != nil || !bytes.Contains(b, []byte("<svg")) {
			t.Errorf("want the %s chart (%v)", name, err)
		}
	}
}

func TestParseMix(t *testing.T) {
	m, err := parseMix("steps=3,saga=1")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := range 8 {
		got = append(got, m.class(i))
	}
	if s := strings.Join(got, ","); s != "steps,steps,saga,steps,steps,steps,saga,steps" {
		t.Errorf("classes of steps=3,saga=1: %s", s)
	}
	if s := m.String(); s != "steps 75%, saga 25%" {
		t.Errorf("String: %s", s)
	}
	for _, bad := range []string{"", "steps", "steps=x", "steps=-1", "cron=1", "steps=1,steps=2", "steps=0", "steps=1001"} {
		if _, err := parseMix(bad); err == nil {
			t.Errorf("parseMix(%q) is no error", bad)
		}
	}
	if _, err := parseMix(defaultMix); err != nil {
		t.Errorf("the default mix: %v", err)
	}
}

// The verdict compares the first and last third of the windows after the
// retention window's first turn: a table that keeps growing there is
// called out, one that only grew before it is not.
func TestLongdayVerdict(t *testing.T) {
	f := LongdayFlags{Rate: 100, Window: 10 * time.Second, Retention: time.Minute, JanitorInterval: 20 * time.Second, Flat: 0.2,
		Drain: time.Minute}
	day := func(ledger func(i int) int64) LongdayResult {
		r := LongdayResult{Offered: 100 * 30 * 10, Sent: 300 * time.Second, Drained: true,
			Finished: map[string]int{classSteps: 30000}, Unexp: map[string]int{}}
		r.Checks = effectChecks{Effects: 30000, Expected: 30000}
		for i := range 30 {
			w := LongdayWindow{Start: time.Duration(i) * f.Window, Len: f.Window, Offered: 1000, RSS: 40 << 20, Goroutines: 50,
				All:    ClassWindow{Finished: 1000, Lat: Percentiles{P50: 20 * time.Millisecond, P99: 80 * time.Millisecond}},
				Tables: map[string]TableSample{}}
			for _, tb := range ldTables {
				w.Tables[tb] = TableSample{Total: 8 << 20}
			}
			w.Tables["ledger"] = TableSample{Total: ledger(i)}
			r.Windows = append(r.Windows, w)
		}
		return r
	}
	var out bytes.Buffer
	// Grows until the first turn (80s), flat after.
	verdict(&out, f, day(func(i int) int64 { return int64(min(i, 8)) * 4 << 20 }))
	if s := out.String(); !strings.Contains(s, "growth: FLAT") || !strings.Contains(s, "load: sustained") ||
		!strings.Contains(s, "exactly once") {
		t.Errorf("a ledger flat after the turn:\n%s", s)
	}
	out.Reset()
	verdict(&out, f, day(func(i int) int64 { return int64(i+1) * 4 << 20 }))
	if s := out.String(); !strings.Contains(s, "growth: GROWING: ledger\n") {
		t.Errorf("a ledger growing to the end:\n%s", s)
	}
	out.Reset()
	short := day(func(int) int64 { return 1 << 20 })
	short.Windows = short.Windows[:9]
	verdict(&out, f, short)
	if s := out.String(); !strings.Contains(s, "growth: no verdict: only 1 windows") {
		t.Errorf("too short a day:\n%s", s)
	}
}
