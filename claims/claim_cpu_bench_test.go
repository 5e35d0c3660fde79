//go:build linux

package claims

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger/internal/test/testdb"
)

// riverShapedClaim is a reference, not a statement of the product: the
// claim without fair share between tenants, shaped as River's fetch (the
// due tasks of the queue, locked and leased in one UPDATE).
const riverShapedClaim = `/* reference: no fair share */
WITH due AS (
	SELECT id FROM tasks WHERE queue = $1 AND ` + dueNow + `
	ORDER BY priority, run_at, id LIMIT $3 FOR UPDATE SKIP LOCKED
)
UPDATE tasks t SET state = 'running', attempt = t.attempt + 1, lease_owner = $2,
	lease_token = t.lease_token + 1, lease_expires_at = now() + $4::interval,
	attempted_at = now(), updated_at = now(), wait_reason = NULL
FROM due WHERE t.id = due.id
RETURNING t.*`

// sortedClaimAlone is claimAloneSQL with claimedFrom's outer sort in
// place of claimedDue's unordered answer.
var sortedClaimAlone = strings.TrimSuffix(claimAloneSQL, claimedDue("due", "ctid", "false", "false")) + ",\n" + claimedFrom("due", "ctid", "false")

// BenchmarkClaimServerCPU reports the server's CPU per claim statement
// (server-µs/claim: the claiming backend's utime+stime from /proc, so run
// it on the database's machine) as at a steady low rate: each iteration
// commits one task, claims it, and finishes it from other connections.
// The tick is 10 ms: use a few thousand iterations.
//
//	go test ./claims -run '^$' -bench ClaimServerCPU -benchtime 3000x -count 3
func BenchmarkClaimServerCPU(b *testing.B) {
	ctx := context.Background()
	for _, c := range []struct{ name, sql string }{
		{"claimAlone", claimAloneSQL},
		{"claimAloneSorted", sortedClaimAlone},
		{"claimDue", claimDueSQL},
		{"claim", claimSQL},
		{"riverShaped", riverShapedClaim},
		{"roundTrip", `SELECT $1::text, $2::text, $3::int, $4::interval, $5::timestamptz, $6::text[], $7::text[]`},
	} {
		b.Run(c.name, func(b *testing.B) {
			db := testdb.New(b) // a fresh table each: dead rows would tilt the later ones
			conn, err := db.Acquire(ctx)
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Release()
			var pid int
			if err := conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
				b.Fatal(err)
			}
			args := []any{DefaultQueue, "bench", 100, 30 * time.Second, nil, []string(nil), []string{"model", "tool:http_request"}}
			switch c.sql {
			case claimDueSQL, claimSQL:
				args = append(args, "", 0, 25) // the rotation's cursor, and the lane's slots
			case claimAloneSQL, sortedClaimAlone:
				args = append(args, "t", before.priority, before.runAt, before.id, false) // the tenant alone, no mark
			}
			cpu0 := backendCPU(b, pid)
			for b.Loop() {
				if _, err := db.Exec(ctx, `INSERT INTO tasks (tenant, queue, kind, payload) VALUES ('t', 'default', 'noop', '{}')`); err != nil {
					b.Fatal(err)
				}
				rows, err := conn.Query(ctx, c.sql, args...)
				if err != nil {
					b.Fatal(err)
				}
				rows.Close()
				if err := rows.Err(); err != nil {
					b.Fatal(err)
				}
				if _, err := db.Exec(ctx, `UPDATE tasks SET state = 'succeeded', lease_expires_at = NULL, finished_at = now()
					WHERE state IN ('running', 'queued')`); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((backendCPU(b, pid)-cpu0).Microseconds())/float64(b.N), "server-µs/claim")
		})
	}
}

// backendCPU is the CPU time process pid has used (utime+stime), at the
// kernel's 10 ms tick.
func backendCPU(b *testing.B, pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatalf("reading the backend's CPU (run on the database's machine): %v", err)
	}
	s := string(raw)
	f := strings.Fields(s[strings.LastIndex(s, ")")+2:]) // fields from the third on
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("unexpected /proc/%d/stat: %q", pid, s)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
