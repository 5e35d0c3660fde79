package main

import (
	"context"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger/internal/test/testdb"
)

// A small fleet over 7 tenants: 1 daemon, 2 daemons directly and, where
// PgBouncer is installed, 2 through it, each pair also with GOMAXPROCS=1;
// real agentd processes built from this source.
func TestFleetSmoke(t *testing.T) {
	t.Parallel()
	args := []string{"fleet", "--database-url", testdb.URL(t), "--tasks", "300", "--tenants", "7", "--daemons", "2",
		"--concurrency", "20", "--batch", "10", "--rounds", "1", "--run-timeout", "1m", "--fleet-gomaxprocs", "1"}
	cases := []string{"1 direct", "2 direct", "2 direct, GOMAXPROCS=1"}
	bin, err := findPgBouncer("")
	if err != nil {
		t.Fatal(err)
	}
	if _, noUser := user.Lookup("postgres"); bin == "" || (os.Geteuid() == 0 && noUser != nil) {
		t.Log("PgBouncer is not installed (or cannot run as postgres): its case is not run")
		args = append(args, "--pgbouncer", "off")
	} else {
		cases = append(cases, "2 via pgbouncer", "2 via pgbouncer, GOMAXPROCS=1")
	}
	out := runBench(t, args...)
	ts := tables(out)
	if len(ts) != 6 {
		t.Fatalf("want 6 tables (rounds, summary, ratios, steady ratios, wait events, lock waits), got %d:\n%s", len(ts), out)
	}
	if len(ts[0]) != len(cases) {
		t.Fatalf("want %d rows in the rounds' table, got %d:\n%s", len(cases), len(ts[0]), out)
	}
	for i, r := range ts[0] {
		f := strings.Fields(r)
		// round, case (two or three words), conc/daemon, secs, start s, tail s, tasks/s, steady/s, …, attempts, once
		label := strings.Join(f[1:len(f)-19], " ")
		if label != cases[i] || f[len(f)-15] == "timeout" || f[len(f)-2] != "300" || f[len(f)-1] != "yes" {
			t.Errorf("row %q: want case %q, 300 tasks each attempted once and succeeded, no timeout", r, cases[i])
		}
	}
	for _, r := range ts[2:4] {
		if n := len(r); n != 2 { // one round and the median
			t.Errorf("want 2 rows of ratios, whole and steady, got %d:\n%s", n, out)
		}
	}
	if len(ts[4]) == 0 || strings.Contains(out, "(0 samples)") {
		t.Errorf("want pg_stat_activity samples of every case:\n%s", out)
	}
}

// The extra fleet cases' daemons run with the GOMAXPROCS they are given,
// and the others with the environment's.
func TestAFleetCaseGivesItsDaemonsGOMAXPROCS(t *testing.T) {
	t.Setenv("GOMAXPROCS", "")
	os.Unsetenv("GOMAXPROCS") // restored by Setenv's cleanup
	bin := filepath.Join(t.TempDir(), "agentd")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho \"GOMAXPROCS=${GOMAXPROCS-unset}\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for procs, want := range map[int]string{0: "GOMAXPROCS=unset", 1: "GOMAXPROCS=1", 3: "GOMAXPROCS=3"} {
		f := NewFleet(FleetSpec{Bin: bin, Daemons: 1, Procs: procs, Concurrency: 1, Batch: 1, MaxConns: 1,
			PollInterval: time.Second, Dir: t.TempDir(), LogLevel: "warn",
			URL: func(string) (string, error) { return "postgres://unused", nil }})
		if err := f.StartNext(); err != nil {
			t.Fatal(err)
		}
		p := f.procs[0]
		<-p.exited
		if got := strings.TrimSpace(p.log.tail()); got != want {
			t.Errorf("Procs %d: the daemon saw %q, want %q", procs, got, want)
		}
	}
}

// The fleet's tasks are spread over --tenants tenants, and one tenant's are
// enqueued as the daemons' clients would.
func TestFleetTasksSpreadOverTheirTenants(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := pgxpool.New(ctx, testdb.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, c := range []struct{ tasks, tenants int }{{30, 1}, {30, 7}, {30, 30}} {
		if _, err := db.Exec(ctx, "TRUNCATE tasks CASCADE"); err != nil {
			t.Fatal(err)
		}
		if err := insertFleetTasks(ctx, db, FleetFlags{Tasks: c.tasks, Tenants: c.tenants, InsertBatch: 8}); err != nil {
			t.Fatal(err)
		}
		var n, tenants, most, least int
		if err := db.QueryRow(ctx, `SELECT sum(n), count(*), max(n), min(n)
FROM (SELECT tenant, count(*) AS n FROM tasks WHERE state = 'queued' GROUP BY tenant) t`).Scan(&n, &tenants, &most, &least); err != nil {
			t.Fatal(err)
		}
		if n != c.tasks || tenants != c.tenants || most-least > 1 {
			t.Errorf("%d tasks over %d tenants: got %d queued tasks over %d tenants, %d to %d each",
				c.tasks, c.tenants, n, tenants, least, most)
		}
	}
}
