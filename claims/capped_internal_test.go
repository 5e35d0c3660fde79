package claims

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentledger/agentledger/internal/test/testdb"
)

// Every claim statement that may lease a capped tenant's tasks marks them
// capped, and the others' uncapped: the full claim, the fair-share due
// claim and the run claim, each from a cursor just before the capped
// tenant t007 in a crowd of 100 thin tenants; and the one-tenant claim
// marks its tenant's uncapped. (Through Store.Claim the loop picks the
// statement; here each is asked directly.)
func TestEachClaimStatementMarksCappedTenants(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct {
		name string
		sql  string
	}{{"claim", claimSQL}, {"due", claimDueSQL}, {"run", claimRunSQL}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			pool := testdb.New(t)
			for _, q := range []string{
				`INSERT INTO tasks (tenant, kind, run_at) SELECT 't' || lpad((g % 100)::text, 3, '0'), 'noop', now() - interval '1 hour'
				 FROM generate_series(0, 199) g`,
				`INSERT INTO tenant_shares (tenant, weight, max_running, source) VALUES ('t007', 1, 3, 'operator'), ('t008', 2, NULL, 'operator')`,
			} {
				if _, err := pool.Exec(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			s := New(pool)
			p := ClaimParams{Queue: DefaultQueue, Worker: "w", Limit: 64, Lease: time.Minute, DueOnly: c.sql != claimSQL,
				Hint: &ClaimHint{from: "t005"}, trusted: true}
			got, err := s.claim(ctx, c.sql, p)
			if err != nil {
				t.Fatal(err)
			}
			marks := map[string]string{}
			rows, err := pool.Query(ctx, `SELECT tenant, coalesce(capped::text, 'unknown') FROM tasks WHERE state = 'running'`)
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var tenant, mark string
				if err := rows.Scan(&tenant, &mark); err != nil {
					t.Fatal(err)
				}
				if want := fmt.Sprint(tenant == "t007"); mark != want {
					t.Errorf("a running task of %s marked %s, want %s", tenant, mark, want)
				}
				marks[tenant] = mark
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			if len(got) == 0 || marks["t007"] == "" {
				t.Fatalf("claimed %d tasks, none of t007's (marks %v): the claim did not reach the capped tenant", len(got), marks)
			}
		})
	}
	t.Run("alone", func(t *testing.T) {
		t.Parallel()
		pool := testdb.New(t)
		if _, err := pool.Exec(ctx, `INSERT INTO tasks (tenant, kind) SELECT 'solo', 'noop' FROM generate_series(1, 3)`); err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `INSERT INTO tenant_shares (tenant, weight, max_running, source) VALUES ('other', 1, 3, 'operator')`); err != nil {
			t.Fatal(err)
		}
		s := New(pool)
		h := &ClaimHint{tenant: "solo", n: 1}
		got, err := s.claim(ctx, claimAloneSQL, ClaimParams{Queue: DefaultQueue, Worker: "w", Limit: 3, Lease: time.Minute, DueOnly: true, Hint: h})
		if err != nil || len(got) != 3 {
			t.Fatalf("claimed %d (%v), want 3", len(got), err)
		}
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM tasks WHERE state = 'running' AND capped = false`).Scan(&n); err != nil || n != 3 {
			t.Fatalf("%d running tasks marked uncapped (%v), want 3", n, err)
		}
	})
}
