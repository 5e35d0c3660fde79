package operator

import (
	"context"
	"testing"
	"time"

	"github.com/agentledger/agentledger/internal/test/plancheck"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

// The operator's cancel reads its one row by primary key, custom plan or
// generic, under statistics that saw no running task (200k finished rows)
// and on a table analyzed while it held 30 rows.
func TestCancelPlanReadsByKey(t *testing.T) {
	for _, size := range []struct {
		name              string
		finished, running int
	}{{"200k-finished", 200_000, 1_200}, {"30-rows", 20, 10}} {
		conn, tr := plancheck.TrapConn(t, testdb.URL(t), size.finished, size.running, 0)
		for _, mode := range plancheck.Modes {
			plan, err := plancheck.Explain(context.Background(), conn, mode, cancelSQL, tr.IDs[0], "", time.Now(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := plancheck.Reads(plan, "tasks", "tasks_pkey"); err != nil {
				t.Errorf("%s/%s: %v", size.name, mode, err)
			}
		}
	}
}
