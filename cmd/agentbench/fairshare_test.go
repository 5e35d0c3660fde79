package main

import (
	"strings"
	"testing"

	"github.com/agentledger/agentledger/internal/test/testdb"
)

func TestFairShareSmoke(t *testing.T) {
	t.Parallel()
	out := runBench(t, "fairshare", "--database-url", testdb.URL(t), "--tenants", "1,3", "--tasks", "60",
		"--claim-batch", "10", "--concurrency", "20", "--batch", "10", "--backlog", "3000", "--samples", "20",
		"--rate", "40", "--hold", "2ms", "--latency-concurrency", "10", "--latency-batch", "10", "--run-timeout", "1m")
	ts := tables(out)
	if len(ts) != 2 || len(ts[0]) != 2 || len(ts[1]) != 1 {
		t.Fatalf("want a cost table of 2 rows (1 and 3 tenants) and a latency row:\n%s", out)
	}
	for i, r := range ts[0] {
		if f := strings.Fields(r); f[0] != []string{"1", "3"}[i] || f[1] != "5" || f[8] == "timeout" {
			t.Errorf("row %q: want the tenants, 5 timed claims (60 tasks by 10, the first left out), no timeout", r)
		}
	}
	if f := strings.Fields(ts[1][0]); f[0] != "20" || f[1] != "20" || f[10] == "0" {
		t.Errorf("latency row %q: want 20 of b's tasks started, with a's backlog not drained", ts[1][0])
	}
}
