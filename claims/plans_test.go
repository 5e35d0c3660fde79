package claims

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentledger/agentledger/internal/plancheck"
	"github.com/agentledger/agentledger/internal/testdb"
)

// plannerTrap opens a connection to a fresh database set as plancheck.Trap
// sets it.
func plannerTrap(t *testing.T, finished, running int) (*pgx.Conn, []int64, []int64) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testdb.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	ids, tokens, _, err := plancheck.Trap(ctx, conn, finished, running, 0)
	if err != nil {
		t.Fatal(err)
	}
	return conn, ids, tokens
}

func TestBatchedPlansAreDrivenByIDs(t *testing.T) {
	conn, ids, tokens := plannerTrap(t, 200_000, 1_200)
	n := len(ids)
	results := make([]string, n)
	errs := make([]string, n)
	delays := make([]int64, n)
	finals := make([]bool, n)
	for i := range results {
		results[i] = `{}`
		errs[i] = "boom"
	}
	now := time.Now()
	cases := []struct {
		name string
		sql  string
		args []any
		one  bool // a statement of one row
	}{
		{"succeed", succeedSQL, []any{ids, tokens, results, now}, false},
		{"fail", failSQL, []any{ids, tokens, errs, delays, finals, now}, false},
		{"release", releaseSQL, []any{ids, tokens, now}, false},
		{"heartbeat", heartbeatSQL, []any{ids, tokens, now, "1 minute"}, false},
		{"current", currentSQL, []any{ids, tokens, now}, false},
		{"stop", stopSQL, []any{ids[0], tokens[0], "parked", now, "needs_attention"}, false},
		{"cancel", cancelSQL, []any{ids[0], "", now}, true},
	}
	for _, c := range cases {
		for _, mode := range plancheck.Modes {
			t.Run(c.name+"/"+mode, func(t *testing.T) {
				plan, err := plancheck.Explain(context.Background(), conn, mode, c.sql, c.args...)
				if err != nil {
					t.Fatal(err)
				}
				check := plancheck.DrivenBy
				if c.one {
					check = plancheck.Reads
				}
				if err := check(plan, "tasks", "tasks_pkey"); err != nil {
					t.Error(err)
				}
				t.Logf("\n%s", plan)
			})
		}
	}
}

// The claim reads the claim indexes by design (its rows come from the
// queue, not from ids); what it must not do is scan the table or loop over
// a scan, and its update must go by primary key.
func TestClaimPlanReadsTheClaimIndexes(t *testing.T) {
	conn, _, _ := plannerTrap(t, 200_000, 1_200)
	if _, err := conn.Exec(context.Background(), `INSERT INTO tasks (kind) SELECT 'noop' FROM generate_series(1, 2000)`); err != nil {
		t.Fatal(err)
	}
	for _, mode := range plancheck.Modes {
		t.Run(mode, func(t *testing.T) {
			plan, err := plancheck.Explain(context.Background(), conn, mode, claimSQL,
				"default", "w2", 1000, "1 minute", time.Now(), []string(nil))
			if err != nil {
				t.Fatal(err)
			}
			if err := plancheck.DrivenBy(plan, "tasks", "tasks_pkey", "tasks_runnable_idx", "tasks_leased_idx"); err != nil {
				t.Error(err)
			}
			if err := plancheck.Lookups(plan, "tasks", "tasks_pkey"); err != nil {
				t.Error(err)
			}
		})
	}
}
