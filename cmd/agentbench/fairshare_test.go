package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/internal/test/testdb"
)

func TestFairShareSmoke(t *testing.T) {
	t.Parallel()
	out := runBench(t, "fairshare", "--database-url", testdb.URL(t), "--tenants", "1,3", "--tasks", "60",
		"--claim-batch", "10", "--concurrency", "20", "--batch", "10", "--shares", "2", "--repeat", "2", "--no-fair",
		"--run-timeout", "1m")
	ts := tables(out)
	if len(ts) != 2 || len(ts[0]) != 4 || len(ts[1]) != 2 {
		t.Fatalf("want a cost table of 4 rows (1 and 3 tenants, twice) and medians of 2:\n%s", out)
	}
	for i, r := range ts[0] {
		f := strings.Fields(r)
		if f[0] != []string{"1", "3"}[i%2] || f[1] != "5" || f[8] == "timeout" {
			t.Errorf("row %q: want the tenants, 5 timed claims (60 tasks by 10, the first left out), no timeout", r)
		}
		if i%2 == 0 && (f[9] != "1.00" || f[10] != "1.00") {
			t.Errorf("1-tenant row %q: want ratios of 1.00 to itself", r)
		}
	}
	for i, r := range ts[1] {
		if f := strings.Fields(r); f[0] != []string{"1", "3"}[i] || f[1] != "2" {
			t.Errorf("medians row %q: want the tenants and 2 repeats", r)
		}
	}
}

// TestFairShareFairness runs the fairness run at 2 tenants (weighed) and
// 100 (turns: crowdAt is 64): b's tasks all start, and no backlog tenant
// goes without a start over the window. The backlog (30,000 tasks) outlasts
// the window: 10 slots held 2 ms each start at most 5,000 tasks a second.
func TestFairShareFairness(t *testing.T) {
	t.Parallel()
	csvPath := filepath.Join(t.TempDir(), "starts.csv")
	out := runBench(t, "fairshare", "--database-url", testdb.URL(t), "--no-cost", "--fair-tenants", "2,100",
		"--fair-csv", csvPath, "--backlog", "30000", "--window", "2s", "--samples", "20", "--rate", "40", "--hold", "2ms",
		"--latency-concurrency", "10", "--latency-batch", "10", "--run-timeout", "2m")
	ts := tables(out)
	if len(ts) != 2 || len(ts[0]) != 2 || len(ts[1]) != 2 {
		t.Fatalf("want a table of b's latency and one of the backlog's starts, each with 2 rows:\n%s", out)
	}
	for i, r := range ts[0] {
		f := strings.Fields(r)
		want := []struct{ n, mode string }{{"2", "weighed"}, {"100", "turns"}}[i]
		if f[0] != want.n || f[1] != want.mode || f[3] != "20" || f[4] != "20" || f[5] != "0" {
			t.Errorf("b row %q: want %s tenants, mode %s, 20 of b's tasks started once", r, want.n, want.mode)
		}
	}
	for i, r := range ts[1] {
		f := strings.Fields(r)
		if f[0] != []string{"2", "100"}[i] || f[2] != []string{"1", "99"}[i] || f[4] == "0" || f[10] != "0" {
			t.Errorf("backlog row %q: want every backlog tenant started in the window, none starved", r)
		}
	}
	data, err := os.ReadFile(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 1+1+99 || lines[1] != "2,weighed,a0000,true,"+strings.Fields(ts[1][0])[3]+","+strings.Fields(ts[1][0])[8] {
		t.Fatalf("--fair-csv: want a header and a row per backlog tenant (1 + 99), the first as in the table:\n%s", data)
	}
	for _, l := range lines[2:] {
		if f := strings.Split(l, ","); f[0] != "100" || f[1] != "turns" || f[3] != "true" || f[4] == "0" {
			t.Errorf("--fair-csv row %q: want a tenant of the 100-tenant run, due at the start, started", l)
		}
	}
}
