package readme

import (
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The examples run beside the demo, as a new user runs them: agentd --demo
// on the embedded cluster of a state directory, then go run
// ./examples/embed and ./examples/mcp on the same one. Each example's
// daemon serves kinds and tools the demo's does not (open_ticket, an MCP
// server, a model endpoint), and the demo's serves the same built-in
// kinds: every task goes to a daemon that can run it, so both examples
// succeed and the demo's tasks end as the README says. (Before daemons
// announced what they can run, the demo's claimed the examples' tasks and
// killed them for a missing tool or model.)
func TestExamplesBesideTheDemo(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	bin := buildBinaries(t, root)
	examples := map[string][]string{
		"embed": {`task \d+ succeeded; tickets opened: 1 \(requests: \d+\)\n`, `task \d+ replayed; tickets opened: 1, requests sent since: 0 \(the ledger served the call\)`},
		"mcp":   {`agent task \d+ succeeded: `, `replayed: 0 new MCP calls, 0 new model calls`},
	}
	for name := range examples {
		build := exec.Command("go", "build", "-o", filepath.Join(bin, name), "./examples/"+name)
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", name, err, out)
		}
	}
	// The server may run as another user (postgres, under root): it must
	// reach the state directory.
	dir, err := os.MkdirTemp("", "agentledger-beside-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DATABASE_URL=") {
			env = append(env, kv)
		}
	}
	env = append(env, "AGENTLEDGER_STATE_DIR="+dir)
	startDemo(t, bin, env, freeAddr(t), dir)
	// A task of the user's that the examples' daemons could run (an agent
	// task: the mcp example's daemon has a model) but must leave alone.
	agent := exec.Command(filepath.Join(bin, "agentctl"), "submit", "-o", "id", "--allow-unserved", "--kind", "agent",
		"--payload", `{"prompt":"the user's own"}`)
	agent.Env = env
	idOut, err := agent.Output()
	if err != nil {
		t.Fatalf("agentctl submit: %v", err)
	}
	users, err := strconv.ParseInt(strings.TrimSpace(string(idOut)), 10, 64)
	if err != nil {
		t.Fatalf("agentctl submit printed %q", idOut)
	}

	for _, name := range slices.Sorted(maps.Keys(examples)) {
		cmd := exec.Command(filepath.Join(bin, name))
		cmd.Dir, cmd.Env = root, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("examples/%s beside the demo: %v\n%s", name, err, out)
		}
		for _, want := range examples[name] {
			if !regexp.MustCompile(want).Match(out) {
				t.Errorf("examples/%s beside the demo: output lacks %q:\n%s", name, want, out)
			}
		}
		t.Logf("examples/%s beside the demo:\n%s", name, out)
	}

	// Nor did the examples' daemons take the demo's tasks (they may not
	// call the demo's API): they end as the README says; the user's agent
	// task waits for a daemon with a model endpoint.
	want := map[int64]string{1: "succeeded", 2: "succeeded", 3: "needs_attention", 4: "compensated", users: "queued"}
	var got map[int64]string
	for range 300 {
		list := exec.Command(filepath.Join(bin, "agentctl"), "list", "-o", "json")
		list.Env = env
		out, err := list.Output()
		if err != nil {
			t.Fatalf("agentctl list: %v", err)
		}
		var tasks []struct {
			ID    int64  `json:"id"`
			State string `json:"state"`
		}
		if err := json.Unmarshal(out, &tasks); err != nil {
			t.Fatalf("agentctl list -o json: %v\n%s", err, out)
		}
		got = map[int64]string{}
		for _, task := range tasks {
			if want[task.ID] != "" {
				got[task.ID] = task.State
			}
			if task.State == "dead" {
				t.Fatalf("task %d is dead: %s", task.ID, out)
			}
		}
		if maps.Equal(got, want) {
			return
		}
		time.Sleep(200 * time.Millisecond) // polling the tasks' states: nothing signals them
	}
	t.Fatalf("the demo's tasks: %v, want %v", got, want)
}
