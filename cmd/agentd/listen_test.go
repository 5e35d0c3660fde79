package main

import (
	"errors"
	"net"
	"os/exec"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/internal/test/testdb"
)

// A second agentd on an address in use, as with two on the defaults, says
// that another agentd probably runs there and how to run without the API:
// exit 1, not the usage error's 2.
func TestListenAddressInUse(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	addr := taken.Addr().String()
	for name, args := range map[string][]string{
		"daemon": {"--listen", addr},
		"demo":   {"--listen", addr, "--demo"},
	} {
		out, err := agentd(t, []string{"DATABASE_URL=" + testdb.Empty(t)}, args...).CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Errorf("%s: %v, want exit status 1; output:\n%s", name, err, out)
		}
		for _, want := range []string{"--listen " + addr + ": the address is already in use, probably by another agentd",
			"--listen ''"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("%s: output does not say %q:\n%s", name, want, out)
			}
		}
	}
}
