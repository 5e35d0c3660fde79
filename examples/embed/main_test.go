package main

import (
	"bytes"
	"context"
	"os/exec"
	"regexp"
	"testing"

	"github.com/agentledger/agentledger/internal/testdb"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// The example runs as the README says (go run ./examples/embed), here on a
// test database: the escalation is decided from its typed payload, the
// ticket is opened once, and the replay opens none.
func TestExampleRuns(t *testing.T) {
	bin := t.TempDir() + "/embed"
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	cmd := exec.CommandContext(context.Background(), bin)
	cmd.Env = append(cmd.Environ(), "DATABASE_URL="+testdb.URL(t))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		`escalate task \d+ succeeded: \{"incident": "42", "page_oncall": true\}`,
		`task \d+ succeeded; tickets opened: 1\n`,
		`task \d+ replayed; tickets opened: 1 \(the ledger served the call\)`,
	} {
		if !regexp.MustCompile(want).MatchString(out.String()) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
