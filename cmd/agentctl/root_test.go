package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// Usage errors are found before any database is opened: these run with a
// database URL nothing listens on.
func TestUsageErrorsExitTwo(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bogus"}, `unknown command "bogus" for "agentctl"`},
		{[]string{"list", "--nope"}, "unknown flag: --nope"},
		{[]string{"-o", "yaml", "list"}, `--output must be table, json or id, not "yaml"`},
		{[]string{"-o", "yaml", "show", "1"}, `--output must be table or json for agentctl show, not "yaml"`},
		{[]string{"list", "--state", "queued,later"}, `unknown state "later": valid states are queued, waiting, running,`},
		{[]string{"list", "--limit", "1001"}, "--limit must be between 1 and 1000"},
		{[]string{"show", "abc"}, `task id must be a positive integer, not "abc"`},
		{[]string{"show", "0"}, `task id must be a positive integer, not "0"`},
		{[]string{"show", "1", "2"}, "show takes one task ID, got 2 arguments"},
		{[]string{"cancel"}, "cancel takes one task ID, got 0 arguments"},
		{[]string{"submit"}, `required flag(s) "kind" not set`},
		{[]string{"submit", "--kind", "k", "--payload", "{"}, "--payload: invalid JSON at offset 1"},
		{[]string{"submit", "--kind", "k", "--run-at", "soon"}, `--run-at: "soon" is neither`},
		{[]string{"submit", "--kind", "k", "--max-attempts", "x"}, `--max-attempts takes a whole number, not "x"`},
		{[]string{"migrate"}, "migrate needs a subcommand: up, down or status"},
		{[]string{"rule"}, "rule needs a subcommand: add, list, rm, enable or disable"},
		{[]string{"rule", "add", "x"}, `required flag(s) "channel" not set`},
		{[]string{"rule", "add", "--channel", "c"}, "rule add takes one rule name, got 0 arguments"},
		{[]string{"rule", "add", "x", "--channel", "c", "--events", "dead,later"}, `--events: "later" is not one of retrying,`},
		{[]string{"rule", "add", "x", "--channel", "a b"}, `--channel: "a b" must be 1-80 characters without spaces`},
		{[]string{"rule", "add", "-x", "--channel", "c"}, "unknown shorthand flag: 'x' in -x"},
		{[]string{"rule", "add", "X", "--channel", "c"}, `rule name: "X" must be 1-63 characters`},
		{[]string{"rule", "rm"}, "rule rm takes one rule name, got 0 arguments"},
		{[]string{"rule", "enable", "a", "b"}, "rule enable takes one rule name, got 2 arguments"},
		{[]string{"migrate", "down", "--to", "-3"}, "--to must be a version (0 or more), not -3"},
		{[]string{"list", "--since", "soon"}, `--since: "soon" is neither`},
		{[]string{"list", "--since", "1h", "--until", "3h"}, "--until: "},
		{[]string{"submit", "--file", "-", "--payload", "-"}, "--file - and --payload - cannot both read standard input"},
		{[]string{"submit", "--file", "testdata/does-not-exist.json"}, "--file: open testdata/does-not-exist.json"},
		{[]string{"retry"}, "retry takes one task ID, got 0 arguments"},
		{[]string{"retry", "1", "--kind", "k"}, "--kind applies only with --all"},
		{[]string{"retry", "--all", "1"}, "retry --all takes no task ID"},
		{[]string{"retry", "--all", "--until", "later"}, `--until: "later" is neither`},
		{[]string{"cancel", "--all", "--state", "dead"}, `dead tasks are not taken here: the states taken are queued, waiting, retrying, running, needs_attention`},
		{[]string{"cancel", "--all", "--state", "deaf"}, `unknown state "deaf": valid states are queued, waiting, retrying, running, needs_attention`},
		{[]string{"cancel", "2", "--since", "1h"}, "--since applies only with --all"},
		{[]string{"ledger"}, "give at least one of --key, --task and --operation"},
		{[]string{"ledger", "--key", "12345"}, `--key "12345" is too short a prefix`},
		{[]string{"ledger", "--task", "-1"}, "--task must be a task id, not -1"},
		{[]string{"ledger", "--operation", "x", "--limit", "0"}, "--limit must be between 1 and 1000, not 0"},
		{[]string{"workers", "--stale-after", "-1s"}, "--stale-after must be positive"},
		{[]string{"tui", "--stale-after", "0s"}, "--stale-after must be positive, not 0s"},
		{[]string{"tui", "--page-size", "0"}, "--page-size must be between 1 and 1000, not 0"},
		{[]string{"workers", "x"}, `unknown command "x" for "agentctl workers"`},
	} {
		args := append([]string{"--database-url", "postgres://nobody@127.0.0.1:1/none"}, tc.args...)
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
		if code != 2 || !strings.HasPrefix(stderr.String(), "agentctl: "+tc.want) || stdout.Len() != 0 {
			t.Errorf("agentctl %s: exit %d\nstdout: %s\nstderr: %s\nwant exit 2 and stderr starting %q",
				strings.Join(tc.args, " "), code, stdout.String(), stderr.String(), "agentctl: "+tc.want)
		}
	}
}

func TestUnreachableDatabaseHidesPassword(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"--database-url", "postgres://bob:s3cret@127.0.0.1:1/none", "list"},
		strings.NewReader(""), &stdout, &stderr)
	if code != 1 || strings.Contains(stderr.String(), "s3cret") || !strings.Contains(stderr.String(), "hint: ") {
		t.Fatalf("exit %d, stderr:\n%s\nwant exit 1, a hint and no password", code, stderr.String())
	}
}

func TestShort(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		0: "0s", 400 * time.Millisecond: "0s", 59*time.Second + 600*time.Millisecond: "1m",
		5*time.Minute - time.Microsecond: "5m", 90 * time.Minute: "1h", 47 * time.Hour: "47h", 72 * time.Hour: "3d",
	} {
		if got := short(d); got != want {
			t.Errorf("short(%v) = %q, want %q", d, got, want)
		}
	}
	now := time.Now()
	if got := relative(now.Add(5*time.Minute), now); got != "in 5m" {
		t.Errorf("relative(+5m) = %q", got)
	}
	if got := relative(now.Add(-3*time.Second), now); got != "3s ago" {
		t.Errorf("relative(-3s) = %q", got)
	}
}

func TestTruncate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"this is too long", 10, "this is t…"},
		{"line one\nline\ttwo", 40, "line one line two"},
		{"ééééééééééé", 5, "éééé…"},
	} {
		if got := truncate(tc.in, tc.n); got != tc.want {
			t.Errorf("truncate(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
