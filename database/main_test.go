package database_test

import (
	"testing"

	"github.com/agentledger/agentledger/internal/testdb"
)

func TestMain(m *testing.M) { testdb.Main(m) }
