package drills_test

import (
	"os"
	"testing"

	"github.com/agentledger/agentledger/internal/test/testdb"
)

func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) != "" {
		runWorker() // never returns
	}
	testdb.Main(m)
}
