package worker_test

import (
	"os"
	"testing"

	"github.com/agentledger/agentledger/internal/test/testdb"
)

func TestMain(m *testing.M) {
	if url := os.Getenv(crashChildEnv); url != "" {
		crashChild(url) // never returns
	}
	testdb.Main(m)
}
