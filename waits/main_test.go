package waits_test

import (
	"testing"

	"github.com/agentledger/agentledger/internal/test/testdb"
)

func TestMain(m *testing.M) { testdb.Main(m) }
