package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/internal/testdb"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// runBench runs the command and returns its standard output; no timing is
// checked, only that every configuration ran and reported.
func runBench(t *testing.T, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	if err := run(context.Background(), args, &out, &errOut); err != nil {
		t.Fatalf("agentbench %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, &out, &errOut)
	}
	return out.String()
}

// dataRows returns the table rows of out: the lines after the dashes.
func dataRows(out string) []string {
	var rows []string
	inTable := false
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.Contains(l, "-----"):
			inTable = true
		case inTable && strings.TrimSpace(l) != "":
			rows = append(rows, l)
		}
	}
	return rows
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
