package main

import (
	"regexp"
	"testing"

	"github.com/agentledger/agentledger/internal/test/testdaemon"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// The example runs as docs/kinds-and-tools.md says (go run ./examples/intercept), here
// on a test database: the audit log sees the refund performed, then served
// on the replay; the large refund parks for a person and is not performed.
func TestExampleRuns(t *testing.T) {
	out := testdaemon.RunProgram(t)
	for _, want := range []string{
		`audit: task \d+ refund at tool/0 \(keyed\) \{"amount":40,"order":7\} performing\n`,
		`audit: task \d+ refund at tool/0 \(keyed\) \{"amount":40,"order":7\} served from the ledger\n`,
		`audit: task \d+ refund at tool/0 \(keyed\) \{"amount":500,"order":8\} stopped: a refund of 500 for order 8 needs a person's approval\n`,
		`task \d+ parked: step 0 \(refund\): a refund of 500 for order 8 needs a person's approval\n`,
		`refunded in all: 40\n`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
