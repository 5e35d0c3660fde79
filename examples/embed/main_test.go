package main

import (
	"regexp"
	"testing"

	"github.com/agentledger/agentledger/internal/test/testdaemon"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// The example runs as docs/kinds-and-tools.md says (go run ./examples/embed), here on a
// test database: the escalation is decided from its typed payload, the
// ticket is opened once, and the replay opens none.
func TestExampleRuns(t *testing.T) {
	out := testdaemon.RunProgram(t)
	for _, want := range []string{
		`escalate task \d+ succeeded: \{"incident": "42", "page_oncall": true\}`,
		`task \d+ succeeded; tickets opened: 1 \(requests: \d+\)\n`,
		`task \d+ replayed; tickets opened: 1, requests sent since: 0 \(the ledger served the call\)`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
