package flow_test

import (
	"os"
	"testing"

	"github.com/agentledger/agentledger/internal/test/testdb"
)

func TestMain(m *testing.M) {
	if spec := os.Getenv(slotHolderEnv); spec != "" {
		holdSlots(spec) // the test binary as another daemon: never returns
	}
	testdb.Main(m)
}
