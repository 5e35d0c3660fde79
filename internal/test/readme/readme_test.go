// Package readme's test runs the shell examples of the README and the
// guides under docs/ as written, in the order a reader meets them, against
// agentd --demo; its other tests hold the docs to the code (links, the
// migrations table, the notification events, the settings).
package readme

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger/internal/test/testdb"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// guides are the files whose ```sh blocks the test runs, in reading order:
// the README, then the guides as its map lists them. A block may depend on
// state an earlier one left (the demo's charge count, tenant acme), so
// moving one moves what follows it. Every docs/*.md must be here.
var guides = []string{
	"README.md",
	"docs/operators.md",
	"docs/tui.md",
	"docs/kinds-and-tools.md",
	"docs/models.md",
	"docs/http-api.md",
	"docs/notifications.md",
	"docs/limits.md",
	"docs/sagas.md",
	"docs/approvals.md",
	"docs/waits.md",
	"docs/security.md",
	"docs/deployment.md",
	"docs/configuration.md",
	"docs/how-it-works.md",
	"docs/design.md",
}

// block is what the test does with one ```sh block of a guide, named by
// its first line.
type block struct {
	// skip says which test runs the block instead; empty runs it here.
	skip string
	// want are texts its output must contain, each as often as listed.
	want []string
}

// blocks lists every ```sh block of the guides: a block the test does not
// know fails it, so a new example cannot go untested.
var blocks = map[string]block{
	"go run ./cmd/agentd --demo": {skip: "this test runs agentd --demo, and .ci/run runs the test command"},
	"go run ./cmd/agentctl tui":  {skip: "package tui's teatest tests drive the console"},
	"go run ./cmd/agentctl list": {want: []string{
		"served from ledger",
		`{"charges":3,"refunds":1,"requests":6}`, `{"charges":3,"refunds":1,"requests":6}`, // the replay called nothing
		"approved", "task 5 succeeded",
	}},
	"ID=$(go run ./cmd/agentctl submit -o id --kind steps": {want: []string{"succeeded", `"id":"ch_6"`}}, // ch_5 is the demo's approved charge
	sagaExample: {want: []string{"compensated", "compensate/tool/1", "compensate/tool/0", "re-run it as a new intent",
		`"refunds":2`, `"releases":2`}},
	"go run ./examples/embed":               {skip: "examples/embed's TestExampleRuns runs it"},
	"go run ./examples/mcp":                 {skip: "examples/mcp's TestExampleRuns runs it"},
	"go run ./examples/intercept":           {skip: "examples/intercept's TestExampleRuns runs it"},
	"go run ./cmd/agentctl tenant add acme": {want: []string{"/v1/tasks/", "Idempotent-Replayed: true", `"kind":"echo"`}},
	"go run ./cmd/agentctl tenant grant acme --tool http_request --host http://127.0.0.1:7450 --decide": {want: []string{`"state":"pending"`, `"state":"approved"`,
		`"decided_by":"tenant:acme, token approver (`, `"decided_via":"api"`, `"code":"conflict"`, "succeeded"}},
	"go run ./cmd/agentctl tenant grant acme": {},
	"ORDER=$(go run ./cmd/agentctl submit -o id --kind steps": {want: []string{"http_request POST http://", `"amount": 99000`, "dead",
		"exit 1: denied", "was decided already: denied by ", "exit 1: decided already"}},
	signalExample: {want: []string{"KIND", "payment.settled key order-11", "Waiting:           waiting for signal payment.settled key order-11", "woke task", "succeeded",
		"duplicate: signal", "it woke task", "no task waits for payment.settled key order-99 yet", "order-99", "ended by operator:",
		"exit 1: the wait was ended"}},
	"PAID=$(go run ./cmd/agentctl submit -o id --kind steps": {want: []string{"payment.settled key order-31", "woke task", "succeeded",
		`"amount": 2500`, "wait_for_signal", "http_request"}},
	"go run ./cmd/agentctl tenant grant acme --tool wait_for_signal": {want: []string{`"key":"order-12"`, `"state":"consumed"`,
		"Idempotent-Replayed: true", `"state":"pending"`, `"key":"order-13"`, "succeeded"}},
	"go run ./cmd/agentctl schedule add nightly-report":                          {want: []string{"nightly-report"}},
	"go run ./cmd/agentctl rule add ops":                                         {want: []string{"billing-dead"}},
	"go run ./cmd/agentctl notifications redeliver --all --dry-run":              {},
	"go run ./cmd/agentctl limit set 'slack-channel:*' --rate 50/min":            {want: []string{"limit slack-channel:C0123456789 removed", "limit mcp:shop set: 5 in flight; breaker 5 in 60s, cool-down 30s", "breaker mcp:shop opened for every daemon until", "5 in 60s, cool-down 30s  opened by an operator", "breaker mcp:shop closed for every daemon"}},
	"go run ./cmd/agentctl limit set http:http://127.0.0.1:7450":                 {want: []string{"succeeded", "deferred", " 1 of 25"}},
	"go run ./cmd/agentctl tenant share set default --weight 2 --max-running 50": {want: []string{"tenant default: weight 2, at most 50 running", "share of tenant default removed: weight 1, no cap on running tasks"}},
	"CHAOS_TASKS=2000":                       {skip: "internal/test/chaos's TestChaos is this run with CI's defaults"},
	"go install ./cmd/agentd ./cmd/agentctl": {},
	"agentctl scope-keys --yes":              {skip: "cmd/agentctl's TestScopeKeys runs it: it wants every daemon stopped"},
	"export DATABASE_URL='postgres://agentledger:choose-one@db.internal/agentledger'": {skip: "it names the reader's own server; cmd/agentctl's scripts run migrate up, tenant add and tenant token create"},
	"DATABASE_URL='postgres://agentledger:…@db1:5432,db2:5432":                        {skip: "internal/test/chaos's TestFailover gives its daemons such a URL"},
	"go test ./internal/test/chaos -run 'TestFailover$'":                              {skip: "internal/test/chaos's TestFailover is this run (CI's); TestFailoverAsync wants CHAOS_FAILOVER_ASYNC"},
}

// signalExample names docs/operators.md's block of signals and waits,
// which begins as docs/approvals' does.
const signalExample = `ORDER=$(go run ./cmd/agentctl submit -o id --kind steps --payload '{"steps":[
  {"tool":"wait_for_signal"`

// sagaExample names docs/sagas.md's block, which begins as the steps
// example's of docs/kinds-and-tools.md does.
const sagaExample = `ID=$(go run ./cmd/agentctl submit -o id --kind steps --payload '{"steps":[
  {"tool":"http_request","args":{"method":"POST","url":"http://127.0.0.1:7450/demo/charges","body":{"order":8,`

func TestREADMEExamples(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	docs := readGuides(t, root)
	bin := buildBinaries(t, root)
	url := testdb.SmallIDsURL(t)
	addr := freeAddr(t)
	env := append(os.Environ(),
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"BIN="+bin, "DATABASE_URL="+url, "GOBIN="+t.TempDir())

	start := time.Now()
	ids := startDemo(t, bin, env, addr, t.TempDir())
	t.Logf("demo banner after %s", time.Since(start).Round(time.Millisecond))
	// The README names the demo's tasks 1 to 5, as the banner of a fresh
	// state directory does.
	if got := strings.Join(ids, ","); got != "1,2,3,4,5" {
		t.Fatalf("the demo banner listed tasks %s; the README says 1, 2, 3, 4 and 5", got)
	}
	waitDemoSettled(t, env)
	t.Logf("demo settled after %s", time.Since(start).Round(time.Millisecond))

	seen := map[string]bool{}
	for _, doc := range docs {
		for _, code := range shellBlocks(doc.text) {
			name, b, ok := lookup(code)
			if !ok {
				t.Fatalf("%s: block not known to this test (add it to blocks):\n%s", doc.path, code)
			}
			seen[name] = true
			if b.skip != "" {
				t.Logf("not run here: %s: %q: %s", doc.path, name, b.skip)
				continue
			}
			script := strings.NewReplacer("localhost:7450", addr, "127.0.0.1:7450", addr).Replace(code)
			cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
			cmd.Dir, cmd.Env = root, env
			began := time.Now()
			out, err := cmd.CombinedOutput()
			t.Logf("ran %s: %q in %s", doc.path, name, time.Since(began).Round(time.Millisecond))
			if err != nil {
				t.Fatalf("%s: block %q: %v\n%s", doc.path, name, err, out)
			}
			for _, w := range b.want {
				if n := strings.Count(string(out), w); n < countOf(b.want, w) {
					t.Errorf("%s: block %q: output has %q %d times, want %d:\n%s", doc.path, name, w, n, countOf(b.want, w), out)
				}
			}
		}
	}
	for name := range blocks {
		if !seen[name] {
			t.Errorf("blocks names %q, which no guide has any more", name)
		}
	}
}

// guide is one file of the reading order, read.
type guide struct{ path, text string }

// readGuides reads the guides in reading order, failing on a guide that
// is missing and on a docs/*.md the order leaves out, so
// a new guide's examples cannot go unrun.
func readGuides(t *testing.T, root string) []guide {
	t.Helper()
	listed := map[string]bool{}
	var out []guide
	for _, p := range guides {
		listed[p] = true
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			t.Fatalf("%s is in the reading order: %v", p, err)
		}
		out = append(out, guide{p, string(b)})
	}
	all, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range all {
		rel := filepath.ToSlash(strings.TrimPrefix(f, root+string(filepath.Separator)))
		if !listed[rel] {
			t.Errorf("%s is not in the reading order: add it to guides", rel)
		}
	}
	return out
}

// shellBlocks returns a guide's ```sh blocks.
func shellBlocks(md string) []string {
	re := regexp.MustCompile("(?ms)^```sh\n(.*?)^```")
	var out []string
	for _, m := range re.FindAllStringSubmatch(md, -1) {
		out = append(out, m[1])
	}
	return out
}

// lookup finds the block whose name is the longest prefix of code.
func lookup(code string) (string, block, bool) {
	best := ""
	for name := range blocks {
		if strings.HasPrefix(code, name) && len(name) > len(best) {
			best = name
		}
	}
	return best, blocks[best], best != ""
}

func countOf(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

// buildBinaries builds agentd and agentctl, and puts beside them a "go"
// that runs them for "go run ./cmd/agentd" and "go run ./cmd/agentctl"
// and is the real go otherwise.
func buildBinaries(t *testing.T, root string) string {
	t.Helper()
	bin := t.TempDir()
	for _, name := range []string{"agentd", "agentctl"} {
		build := exec.Command("go", "build", "-o", filepath.Join(bin, name), "./cmd/"+name)
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", name, err, out)
		}
	}
	realGo, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	shim := fmt.Sprintf(`#!/bin/sh
if [ "$1" = run ]; then
	case "$2" in
	./cmd/agentd|./cmd/agentctl) name=${2#./cmd/}; shift 2; exec "$BIN/$name" "$@";;
	esac
fi
exec %q "$@"
`, realGo)
	if err := os.WriteFile(filepath.Join(bin, "go"), []byte(shim), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startDemo runs agentd --demo on state directory dir until the test ends
// and returns the task ids its banner lists.
func startDemo(t *testing.T, bin string, env []string, addr, dir string) []string {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, "agentd"), "--demo", "--listen", addr, "--state-dir", dir, "--grace", "1s")
	cmd.Env = env
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("agentd's log:\n%s", logs.String())
		}
	})
	taskLine := regexp.MustCompile(`^\s+task (\d+)\s`)
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var ids []string
	timeout := time.After(60 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("agentd ended before its banner:\n%s", logs.String())
			}
			if m := taskLine.FindStringSubmatch(l); m != nil {
				ids = append(ids, m[1])
			}
			if strings.Contains(l, "Look next") {
				go func() { _, _ = io.Copy(io.Discard, stdout) }()
				go func() {
					for range lines {
					}
				}()
				return ids
			}
		case <-timeout:
			t.Fatalf("no demo banner within 60 s:\n%s", logs.String())
		}
	}
}

// waitDemoSettled waits until the demo's tasks reached the states the
// README describes: 1 and 2 succeeded, 3 needs attention, 4 (the saga)
// compensated, 5 (the large charge) waiting for approval.
func waitDemoSettled(t *testing.T, env []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	want := "1 succeeded\n2 succeeded\n3 needs_attention\n4 compensated\n5 waiting"
	var got string
	pool := testdb.Open(t, envValue(env, "DATABASE_URL"))
	for ctx.Err() == nil {
		rows, err := pool.Query(ctx, `SELECT id || ' ' || state FROM tasks WHERE id <= 5 ORDER BY id`)
		if err == nil {
			var states []string
			for rows.Next() {
				var s string
				if rows.Scan(&s) == nil {
					states = append(states, s)
				}
			}
			rows.Close()
			got = strings.Join(states, "\n")
		}
		if got == want {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond): // polling the tasks' states: nothing signals them
		}
	}
	t.Fatalf("the demo's tasks did not settle:\n%s\nwant:\n%s", got, want)
}

func envValue(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v
		}
	}
	return ""
}
