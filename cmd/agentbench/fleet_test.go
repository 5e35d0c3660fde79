package main

import (
	"os"
	"os/user"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/internal/test/testdb"
)

// A small fleet: 1 daemon, 2 daemons directly and, where PgBouncer is
// installed, 2 through it; real agentd processes built from this source.
func TestFleetSmoke(t *testing.T) {
	t.Parallel()
	args := []string{"fleet", "--database-url", testdb.URL(t), "--tasks", "300", "--daemons", "2", "--concurrency", "20",
		"--batch", "10", "--rounds", "1", "--run-timeout", "1m"}
	cases := []string{"1 direct", "2 direct"}
	bin, err := findPgBouncer("")
	if err != nil {
		t.Fatal(err)
	}
	if _, noUser := user.Lookup("postgres"); bin == "" || (os.Geteuid() == 0 && noUser != nil) {
		t.Log("PgBouncer is not installed (or cannot run as postgres): its case is not run")
		args = append(args, "--pgbouncer", "off")
	} else {
		cases = append(cases, "2 via pgbouncer")
	}
	out := runBench(t, args...)
	ts := tables(out)
	if len(ts) != 5 {
		t.Fatalf("want 5 tables (rounds, summary, ratios, wait events, lock waits), got %d:\n%s", len(ts), out)
	}
	if len(ts[0]) != len(cases) {
		t.Fatalf("want %d rows in the rounds' table, got %d:\n%s", len(cases), len(ts[0]), out)
	}
	for i, r := range ts[0] {
		f := strings.Fields(r)
		// round, case (two or three words), conc/daemon, secs, tasks/s, …, attempts, once
		label := strings.Join(f[1:len(f)-16], " ")
		if label != cases[i] || f[len(f)-14] == "timeout" || f[len(f)-2] != "300" || f[len(f)-1] != "yes" {
			t.Errorf("row %q: want case %q, 300 tasks each attempted once and succeeded, no timeout", r, cases[i])
		}
	}
	if n := len(ts[2]); n != 2 { // one round and the median
		t.Errorf("want 2 rows of ratios, got %d:\n%s", n, out)
	}
	if len(ts[3]) == 0 || strings.Contains(out, "(0 samples)") {
		t.Errorf("want pg_stat_activity samples of every case:\n%s", out)
	}
}
