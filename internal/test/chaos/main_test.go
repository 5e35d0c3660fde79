package chaos

import (
	"os"
	"testing"
)

// TestMain removes the binaries the drills shared (binaries).
func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}
