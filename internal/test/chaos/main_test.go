package chaos

import (
	"os"
	"testing"
)

// TestMain removes the binaries the drills shared (binaries); run as a
// drill's daemon (ticketDaemonEnv), it is that daemon.
func TestMain(m *testing.M) {
	if os.Getenv(ticketDaemonEnv) != "" {
		runTicketDaemon() // never returns
	}
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}
