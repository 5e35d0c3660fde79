package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentledger/agentledger/internal/test/testdb"
)

// statusFileEnv names the file where agentctl, run by a test script,
// records its exit code for the script's exitcode command.
const statusFileEnv = "AGENTCTL_TEST_STATUS_FILE"

// TestMain is also agentctl itself: test scripts run this binary under the
// name agentctl (see TestScripts), and then it runs the command and exits.
// Otherwise it runs the tests through testdb.Main, which stops the shared
// database cluster and checks for leaked goroutines.
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == "agentctl" {
		os.Exit(scriptAgentctl())
	}
	testdb.Main(m)
}

// scriptAgentctl runs agentctl for a test script and records its exit code.
func scriptAgentctl() int {
	status := os.Getenv(statusFileEnv)
	if status != "" {
		_ = os.Remove(status) // a crash must not leave the last command's code behind
	}
	code := agentctl(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	if status != "" {
		if err := os.WriteFile(status, []byte(fmt.Sprint(code)), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "agentctl test: recording exit code: %v\n", err)
			return 99
		}
	}
	return code
}
