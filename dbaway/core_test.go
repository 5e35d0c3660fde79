package dbaway_test

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/agentledger/agentledger"

// The core: the packages a task passes through when it runs. They ask
// "is the database away?" of this package, so as not to link the
// embedded cluster's launcher, which starts programs.
var core = []string{"ledger", "worker", "tools", "steps", "httpapi"}

// None of the core's dependencies is pgembed or os/exec (database brings
// both, through pgembed). No third-party library the core uses imports
// os/exec today, so os/exec is checked for every dependency; should one
// come to, this test names its chain and the check can be narrowed to
// the module's own packages.
func TestCoreLinksNoLauncher(t *testing.T) {
	forbidden := []string{module + "/pgembed", "os/exec", module + "/database"}
	graph := importGraph(t, core...)
	for _, pkg := range core {
		for _, bad := range forbidden {
			if chain := importChain(graph, module+"/"+pkg, bad); chain != nil {
				t.Errorf("%s links %s: %s", pkg, bad, strings.Join(chain, " -> "))
			}
		}
	}
}

// This package stays a leaf: of the module it imports the root only.
func TestLeaf(t *testing.T) {
	graph := importGraph(t, "dbaway")
	for pkg := range graph {
		if strings.HasPrefix(pkg, module+"/") && pkg != module+"/dbaway" {
			t.Errorf("dbaway links %s: %s", pkg, strings.Join(importChain(graph, module+"/dbaway", pkg), " -> "))
		}
	}
}

// importGraph is the import graph of pkgs (paths under the module) and
// everything they depend on, as go list -deps prints it.
func importGraph(t *testing.T, pkgs ...string) map[string][]string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	args := []string{"list", "-deps", "-f", `{{.ImportPath}} {{join .Imports " "}}`}
	for _, p := range pkgs {
		args = append(args, module+"/"+p)
	}
	out, err := exec.Command(goTool, args...).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go list: %v\n%s", err, stderr)
	}
	graph := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		if len(fields) > 0 {
			graph[fields[0]] = fields[1:]
		}
	}
	if len(graph) == 0 {
		t.Fatal("go list printed no packages")
	}
	return graph
}

// importChain is a shortest chain of imports from from to to, or nil.
func importChain(graph map[string][]string, from, to string) []string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p == to {
			var chain []string
			for ; p != ""; p = prev[p] {
				chain = append([]string{p}, chain...)
			}
			return chain
		}
		for _, q := range graph[p] {
			if _, seen := prev[q]; !seen {
				prev[q] = p
				queue = append(queue, q)
			}
		}
	}
	return nil
}
