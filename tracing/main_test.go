package tracing_test

import (
	"testing"

	"github.com/agentledger/agentledger/internal/test/testdb"
)

// Tests here swap the process's tracer (tracing.Use): none is parallel.
func TestMain(m *testing.M) { testdb.Main(m) }
