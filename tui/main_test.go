package tui

import (
	"testing"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/agentledger/agentledger/internal/test/testdb"
)

// TestMain renders without colours, so that screens compare as text, and
// runs the tests through testdb.Main (the shared database cluster, goleak).
func TestMain(m *testing.M) {
	lipgloss.SetColorProfile(termenv.Ascii)
	testdb.Main(m)
}
