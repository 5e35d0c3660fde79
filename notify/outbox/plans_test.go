package outbox

import (
	"context"
	"testing"
	"time"

	"github.com/agentledger/agentledger/internal/test/plancheck"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

// With statistics that saw no pending event, the claim still finds due
// events through the pending index and checks each one's predecessors
// through the task index (not by scanning every pending event per
// candidate), and the settling writes go by primary key.
func TestPlansUnderStaleStatistics(t *testing.T) {
	ctx := context.Background()
	conn, tr := plancheck.TrapConn(t, testdb.URL(t), 1_000, 10, 200_000)
	events := tr.Events
	// Leases the claim may take over: expired ones.
	if _, err := conn.Exec(ctx, `UPDATE outbox SET lease_expires_at = now() - interval '1 minute' WHERE state = 'pending'`); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	cases := []struct {
		name    string
		sql     string
		args    []any
		indexes []string
		one     bool
	}{
		{"claim", claimSQL, []any{"d2", 100, "1 minute", now}, []string{"outbox_pkey", "outbox_pending_idx", "outbox_task_idx"}, false},
		{"delivered", deliveredSQL, []any{events[0], int64(1), now, ""}, []string{"outbox_pkey"}, true},
		{"retry", retrySQL, []any{events[0], int64(1), now, 0, "", now}, []string{"outbox_pkey"}, true},
		{"failed", failedSQL, []any{events[0], int64(1), "boom", now}, []string{"outbox_pkey"}, true},
		{"failed events of a task", failedEventsSQL(true), []any{int64(7), "", 1000}, []string{"outbox_task_idx"}, false},
		{"requeue a task's", requeueSQL(true), []any{int64(7), "", 1000, now}, []string{"outbox_pkey", "outbox_task_idx"}, false},
	}
	for _, c := range cases {
		for _, mode := range plancheck.Modes {
			t.Run(c.name+"/"+mode, func(t *testing.T) {
				plan, err := plancheck.Explain(ctx, conn, mode, c.sql, c.args...)
				if err != nil {
					t.Fatal(err)
				}
				check := plancheck.DrivenBy
				if c.one {
					check = plancheck.Reads
				}
				if err := check(plan, "outbox", c.indexes...); err != nil {
					t.Error(err)
				}
				// Each candidate's predecessors are looked up, not scanned.
				if err := plancheck.Lookups(plan, "outbox", "outbox_task_idx", "outbox_pkey"); err != nil {
					t.Error(err)
				}
			})
		}
	}
}
