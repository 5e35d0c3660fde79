package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/database"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" { // re-executed as a worker process by throughput --processes
		os.Exit(mainCode())
	}
	testdb.Main(m)
}

// runBench runs the command and returns its standard output; no timing is
// checked, only that every configuration ran and reported.
func runBench(t *testing.T, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	if err := run(context.Background(), args, &out, &errOut); err != nil {
		shown := make([]string, len(args)) // database URLs carry the test cluster's password
		for i, a := range args {
			shown[i] = database.Redact(a)
		}
		t.Fatalf("agentbench %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(shown, " "), err, &out, &errOut)
	}
	return out.String()
}

// dataRows returns the table rows of out: the lines after the dashes.
func dataRows(out string) []string {
	var rows []string
	for _, t := range tables(out) {
		rows = append(rows, t...)
	}
	return rows
}

// tables returns the rows of each table of out: the lines after a line of
// dashes, up to a blank line.
func tables(out string) [][]string {
	var ts [][]string
	inTable := false
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.Contains(l, "-----"):
			inTable = true
			ts = append(ts, nil)
		case strings.TrimSpace(l) == "":
			inTable = false
		case inTable:
			ts[len(ts)-1] = append(ts[len(ts)-1], l)
		}
	}
	return ts
}

func TestThroughputSmoke(t *testing.T) {
	t.Parallel()
	for _, reset := range []string{"template", "truncate"} {
		t.Run(reset, func(t *testing.T) {
			out := runBench(t, "throughput", "--database-url", testdb.URL(t), "--reset", reset,
				"--tasks", "200", "--insert-batch", "64", "--pools", "1,2", "--concurrency", "20",
				"--batch", "10,20,50", "--run-timeout", "1m")
			rows := dataRows(out)
			if len(rows) != 4 { // batch 50 is above the concurrency: skipped
				t.Fatalf("want 4 result rows, got %d:\n%s", len(rows), out)
			}
			for _, r := range rows {
				f := strings.Fields(r)
				if f[3] != "200" || f[6] == "timeout" || f[11] != "200" {
					t.Errorf("row %q: want 200 tasks, all attempted once, no timeout", r)
				}
			}
		})
	}
}

func TestLatencySmoke(t *testing.T) {
	t.Parallel()
	out := runBench(t, "latency", "--database-url", testdb.URL(t), "--both", "--rate", "100",
		"--duration", "1s", "--warmup", "200ms", "--poll-interval", "100ms", "--run-timeout", "1m")
	rows := dataRows(out)
	if len(rows) != 2 || !strings.HasPrefix(strings.TrimSpace(rows[0]), "notify") ||
		!strings.HasPrefix(strings.TrimSpace(rows[1]), "poll-only") {
		t.Fatalf("want a notify and a poll-only row:\n%s", out)
	}
	for _, r := range rows {
		if f := strings.Fields(r); f[1] != "100" || f[2] != "100" {
			t.Errorf("row %q: want 100 tasks enqueued and started", r)
		}
	}
}

func TestThroughputProcessesSmoke(t *testing.T) {
	t.Parallel()
	out := runBench(t, "throughput", "--database-url", testdb.URL(t), "--tasks", "200", "--processes", "1,2",
		"--concurrency", "20", "--batch", "10", "--run-timeout", "1m")
	rows := dataRows(out)
	if len(rows) != 2 {
		t.Fatalf("want 2 result rows (1 and 2 processes, no in-process pools), got %d:\n%s", len(rows), out)
	}
	for i, r := range rows {
		f := strings.Fields(r)
		if f[0] != []string{"1proc", "2proc"}[i] || f[3] != "200" || f[6] == "timeout" || f[11] != "200" ||
			f[len(f)-2] == "?" || f[len(f)-1] == "0" {
			t.Errorf("row %q: want 200 tasks, all attempted once, no timeout, an RSS and connections", r)
		}
	}
}

func TestRiverSmoke(t *testing.T) {
	t.Parallel()
	out := runBench(t, "river", "--database-url", testdb.URL(t), "--reset", "truncate", "--tasks", "200",
		"--max-workers", "20,50", "--run-timeout", "1m")
	rows := dataRows(out)
	if len(rows) != 2 {
		t.Fatalf("want 2 result rows, got %d:\n%s", len(rows), out)
	}
	for _, r := range rows {
		if f := strings.Fields(r); f[1] != "200" || f[4] == "timeout" || f[5] != "200" {
			t.Errorf("row %q: want 200 jobs, each attempted once, no timeout", r)
		}
	}
}

func TestRiverLatencySmoke(t *testing.T) {
	t.Parallel()
	out := runBench(t, "river-latency", "--database-url", testdb.URL(t), "--rate", "100", "--duration", "1s",
		"--warmup", "200ms", "--fetch-cooldown", "2ms", "--run-timeout", "1m")
	rows := dataRows(out)
	if len(rows) != 1 || !strings.HasPrefix(strings.TrimSpace(rows[0]), "notify-cd2ms") {
		t.Fatalf("want one notify-cd2ms row:\n%s", out)
	}
	if f := strings.Fields(rows[0]); f[1] != "100" || f[2] != "100" {
		t.Errorf("row %q: want 100 jobs inserted and started", rows[0])
	}
}

// The command itself fails unless the downstream performed one business
// effect per call; both completions leave every job completed once.
func TestRiverEffectsSmoke(t *testing.T) {
	t.Parallel()
	for _, complete := range []string{"batched", "tx"} {
		out := runBench(t, "river-effects", "--database-url", testdb.URL(t), "--reset", "truncate", "--tasks", "60",
			"--effects", "1,3", "--complete", complete, "--max-workers", "10", "--run-timeout", "1m")
		rows := dataRows(out)
		if len(rows) != 2 {
			t.Fatalf("%s: want 2 result rows (1 and 3 effects), got %d:\n%s", complete, len(rows), out)
		}
		for i, r := range rows {
			f := strings.Fields(r)
			if f[1] != complete || f[2] != "60" || f[4] == "timeout" || f[6] != []string{"60", "180"}[i] || f[7] != "60" {
				t.Errorf("row %q: want 60 jobs, %s completion, one hit per call, each job attempted once", r, complete)
			}
		}
	}
}

// unsafe_http: no key, so the downstream counts each request as an
// effect, and the command fails unless there is one per call.
func TestEffectsUnsafeSmoke(t *testing.T) {
	t.Parallel()
	out := runBench(t, "effects", "--database-url", testdb.URL(t), "--tasks", "40", "--effects", "2", "--tool", "unsafe",
		"--concurrency", "10", "--batch", "10", "--run-timeout", "1m")
	if rows := dataRows(out); len(rows) != 1 || strings.Fields(rows[0])[6] != "80" {
		t.Fatalf("want one row with 80 downstream hits:\n%s", out)
	}
}

// Every approved request makes its one effect (the command fails
// otherwise), and the table has its latency row.
func TestApprovalsSmoke(t *testing.T) {
	t.Parallel()
	out := runBench(t, "approvals", "--database-url", testdb.URL(t), "--requests", "10", "--rate", "100", "--run-timeout", "1m")
	if rows := dataRows(out); len(rows) != 1 || strings.Fields(rows[0])[1] != "10" {
		t.Fatalf("want one row with 10 effects:\n%s", out)
	}
}

// Tasks waiting for approval beside the burn-down are left waiting: the
// run's tasks alone are burnt down.
func TestThroughputWaitingSmoke(t *testing.T) {
	t.Parallel()
	out := runBench(t, "throughput", "--database-url", testdb.URL(t), "--tasks", "200", "--waiting", "300", "--pools", "1",
		"--concurrency", "50", "--batch", "50", "--run-timeout", "1m")
	if rows := dataRows(out); len(rows) != 1 {
		t.Fatalf("want one row:\n%s", out)
	}
}

func TestEffectsSmoke(t *testing.T) {
	t.Parallel()
	// The command itself fails unless every effect was performed once and
	// every replayed one served with no downstream call.
	out := runBench(t, "effects", "--database-url", testdb.URL(t), "--tasks", "50", "--effects", "1,2", "--replay",
		"--concurrency", "10", "--batch", "10", "--run-timeout", "1m")
	rows := dataRows(out)
	if len(rows) != 4 {
		t.Fatalf("want 4 result rows (1 and 2 effects, first and replay), got %d:\n%s", len(rows), out)
	}
	for i, r := range rows {
		f := strings.Fields(r)
		effects, phase := []string{"1", "2"}[i/2], []string{"first", "replay"}[i%2]
		done := f[7] // performed
		if phase == "replay" {
			done = f[8] // served
		}
		if want := 50 * (i/2 + 1); f[0] != effects || f[1] != phase || f[2] != "50" || f[4] == "timeout" ||
			done != fmt.Sprint(want) {
			t.Errorf("row %q: want %s effects, phase %s, 50 tasks, %d effects performed or served", r, effects, phase, want)
		}
	}
}

// With --limit-rate and --tool custom every performed charge call takes
// the limit: the first phase books (in batches, so at most one booking
// per call) and times its checks; the replay performs nothing and books
// nothing.
func TestEffectsLimitSmoke(t *testing.T) {
	t.Parallel()
	out := runBench(t, "effects", "--database-url", testdb.URL(t), "--tasks", "50", "--effects", "2", "--replay",
		"--concurrency", "10", "--batch", "10", "--run-timeout", "1m", "--tool", "custom", "--limit-rate", "1000000/s")
	rows := dataRows(out)
	if len(rows) != 2 {
		t.Fatalf("want 2 result rows (first and replay), got %d:\n%s", len(rows), out)
	}
	first, replay := strings.Fields(rows[0]), strings.Fields(rows[1])
	bookings, p50 := first[len(first)-3], first[len(first)-2]
	if n, err := strconv.Atoi(bookings); err != nil || n < 1 || n > 100 {
		t.Errorf("first phase: %s bookings, want 1..100 (100 calls):\n%s", bookings, out)
	}
	if _, err := strconv.ParseFloat(p50, 64); err != nil {
		t.Errorf("first phase: take p50 %q, want a number:\n%s", p50, out)
	}
	if got := strings.Join(replay[len(replay)-3:], " "); got != "0 - -" {
		t.Errorf("replay: bookings and take p50, p99 %q, want \"0 - -\":\n%s", got, out)
	}
}

func TestGrowthSmoke(t *testing.T) {
	t.Parallel()
	out := runBench(t, "growth", "--database-url", testdb.URL(t), "--finished", "0,300", "--rounds", "2",
		"--ledger-rows", "0,1k", "--tasks", "100", "--burn-tasks", "200", "--effects", "20", "--find-samples", "1", "--run-timeout", "1m")
	ts := tables(out)
	if len(ts) != 2 || len(ts[0]) != 4 || len(ts[1]) != 6 {
		t.Fatalf("want a table of 4 finished-task rows (2 sizes, 2 rounds) and one of 6 ledger rows:\n%s", out)
	}
	for i, r := range ts[0] {
		f := strings.Fields(r)
		if f[0] != []string{"0", "0", "300", "300"}[i] || f[1] != []string{"1", "2"}[i%2] || f[3] != "9" || f[11] == "timeout" {
			t.Errorf("row %q: want size, round, 9 timed claims (100 tasks by 10, the first left out), no timeout", r)
		}
	}
	for i, r := range ts[1] {
		if f := strings.Fields(r); f[2] != []string{"hit", "fresh", "find"}[i%3] || f[3] != []string{"20", "20", "1"}[i%3] {
			t.Errorf("row %q: want 20 hits, 20 fresh effects, 1 find", r)
		}
	}
}

func TestSustainedSmoke(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	csvPath, chart := filepath.Join(dir, "s.csv"), filepath.Join(dir, "s.png")
	out := runBench(t, "sustained", "--database-url", testdb.URL(t), "--duration", "3s", "--window", "1s",
		"--rate", "50", "--enqueuers", "2", "--concurrency", "10", "--batch", "10", "--max-conns", "4",
		"--retention", "1s", "--janitor-interval", "1s", "--cron", "@every 1s", "--csv", csvPath, "--chart", chart)
	ts := tables(out)
	if len(ts) != 2 || len(ts[0]) != 3 || len(ts[1]) != 5 {
		t.Fatalf("want a table of 3 windows and a summary of 5 rows:\n%s", out)
	}
	for i, r := range ts[0] {
		if f := strings.Fields(r); f[0] != fmt.Sprint(i) || f[3] == "0" {
			t.Errorf("window %q: want start %ds and tasks started", r, i)
		}
	}
	// The janitor runs at 0.1s, 1.1s, 2.1s…: from 2.1s on, tasks finished
	// over a second ago are there to delete.
	if !strings.Contains(out, "150 scheduled") || !strings.Contains(out, "150 started") ||
		strings.Contains(out, "janitor deleted 0 tasks") || strings.Contains(out, "cron fired 0 tasks") {
		t.Errorf("want 150 tasks started, some cron tasks fired and finished tasks deleted:\n%s", out)
	}
	b, err := os.ReadFile(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(string(b)), "\n"); len(lines) != 4 || !strings.HasPrefix(lines[0], "window_start_s,") {
		t.Errorf("want a CSV header and 3 windows:\n%s", b)
	}
	if b, err := os.ReadFile(chart); err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Errorf("want a PNG chart (%v)", err)
	}
}

func TestCountList(t *testing.T) {
	var l countList
	if err := l.Set("0, 1000,100k,5M"); err != nil || l.String() != "0,1000,100000,5000000" {
		t.Fatalf("countList: %v %v", l, err)
	}
	if err := l.Set("-1"); err == nil {
		t.Fatal("a negative count is not an error")
	}
}

func TestUsage(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"help"}, &out, &errOut); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("help: %v", err)
	}
	if !strings.Contains(out.String(), "agentbench throughput") {
		t.Fatalf("usage does not list the commands:\n%s", &out)
	}
	if err := run(context.Background(), []string{"bogus"}, &out, &errOut); err == nil {
		t.Fatal("an unknown command is not an error")
	}
	if err := run(context.Background(), []string{"throughput", "--reset", "bogus"}, &out, &errOut); err == nil {
		t.Fatal("a bad --reset is not an error")
	}
}

// --tracing both runs each configuration untraced, then traced, and the
// traced run's spans reach the sink: an attempt span per task at least
// (tests running beside it may add theirs).
func TestTracingSmoke(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"throughput", "--database-url", testdb.URL(t), "--tasks", "100",
		"--pools", "1", "--concurrency", "20", "--batch", "10", "--tracing", "both", "--run-timeout", "1m"}, &out, &errOut)
	if err != nil {
		t.Fatalf("%v\n%s", err, &errOut)
	}
	rows := dataRows(out.String())
	if len(rows) != 2 || strings.Fields(rows[0])[3] != "off" || strings.Fields(rows[1])[3] != "on" {
		t.Fatalf("want a row untraced, then one traced:\n%s", &out)
	}
	m := regexp.MustCompile(`the sink got \d+ spans map\[agentledger\.attempt:(\d+)`).FindStringSubmatch(errOut.String())
	if m == nil {
		t.Fatalf("no count of the sink's attempt spans:\n%s", &errOut)
	}
	if n, _ := strconv.Atoi(m[1]); n < 100 {
		t.Errorf("the sink got %d attempt spans, want 100 at least:\n%s", n, &errOut)
	}
	if err := run(context.Background(), []string{"throughput", "--tracing", "maybe"}, &out, &errOut); err == nil ||
		!strings.Contains(err.Error(), `--tracing "maybe": give off, on or both`) {
		t.Errorf("--tracing maybe: %v", err)
	}
}
