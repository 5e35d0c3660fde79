package main

import (
	"regexp"
	"testing"

	"github.com/agentledger/agentledger/internal/test/testdaemon"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// The example runs as docs/kinds-and-tools.md says (go run ./examples/mcp), here on a
// test database: the agent calls the three MCP tools once each, and the
// replay calls neither the server nor the model.
func TestExampleRuns(t *testing.T) {
	out := testdaemon.RunProgram(t)
	for _, want := range []string{
		`agent task \d+ succeeded: Order 7 was paid, is on hold and refunded\.`,
		`MCP calls: 3, model calls: 4`,
		`(?m)^lookup order=7 key=[0-9a-f]{12}$`,
		`(?m)^refund order=7 key=[0-9a-f]{12}$`,
		`replayed: 0 new MCP calls, 0 new model calls`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
