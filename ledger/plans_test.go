package ledger

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/plancheck"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/notify/outbox"
)

// The fenced statements find the fencing row by its primary key under
// statistics that saw no running task and no pending event, custom plan or
// generic, and the effect's row by the ledger's key.
func TestFencedPlansReadByKey(t *testing.T) {
	ctx := context.Background()
	conn, tr := plancheck.TrapConn(t, testdb.URL(t), 200_000, 1_200, 1_000)
	ids, tokens, events := tr.IDs, tr.Tokens, tr.Events
	for _, f := range []struct {
		name, table, index string
		q                  *fenced
		id, token          int64
	}{
		{"task", "tasks", "tasks_pkey", queriesOf(claims.LeaseFence{}), ids[0], tokens[0]},
		{"event", "outbox", "outbox_pkey", queriesOf(outbox.ClaimFence{}), events[0], 1},
	} {
		pk := []any{"default", "http.post", "k1"}
		stmts := map[string][]any{
			"fence":       {f.id, f.token},
			"reserveFast": append(pk[:3:3], []byte("h"), "keyed", ids[0], 1, "0", f.token, f.id, false),
			"lookup":      append(pk[:3:3], f.id, f.token),
			"insertOutcome": append(pk[:3:3], []byte("h"), "keyed", ids[0], 1, "0", f.token,
				"completed", "{}", "", "", f.id),
			"insertKeyedOutcome": append(pk[:3:3], []byte("h"), "keyed", ids[0], 1, "0", f.token,
				"completed", "{}", "", "", f.id),
			"record": append(pk[:3:3], "completed", "{}", "", "", f.token, f.id),
			"landed": append(pk[:3:3], f.token, f.id),
		}
		sql := map[string]string{"fence": f.q.fence, "reserveFast": f.q.reserveFast, "lookup": f.q.lookup,
			"insertOutcome": f.q.insertOutcome, "insertKeyedOutcome": f.q.insertKeyedOutcome, "record": f.q.record, "landed": f.q.landed}
		for name, args := range stmts {
			for _, mode := range plancheck.Modes {
				t.Run(f.name+"/"+name+"/"+mode, func(t *testing.T) {
					plan, err := plancheck.Explain(ctx, conn, mode, sql[name], args...)
					if err != nil {
						t.Fatal(err)
					}
					if err := plancheck.Reads(plan, f.table, f.index); err != nil {
						t.Error(err)
					}
					if err := plancheck.Reads(plan, "ledger", "ledger_pkey"); err != nil {
						t.Error(err)
					}
				})
			}
		}
	}
}

// A key-prefix look-up reads the ledger through ledger_key_prefix_idx, not
// by scanning it, with sequential scans allowed (Find allows them for its
// other searches) and statistics of a large table, custom plan or generic.
func TestFindByKeyPlanUsesPrefixIndex(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testdb.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	// 300,000 effects of 100,000 tasks, keyed as EffectKey keys them
	// (SHA-256 hex), inserted in key order so that the fill is quick.
	for _, q := range []string{
		`INSERT INTO ledger (tenant, operation, effect_key, request_hash, class, state, task_id, generation,
			step_path, owner_token, result)
		 SELECT 'default', 'http_request', encode(sha256(convert_to(g::text, 'UTF8')), 'hex'), '\x00', 'keyed',
			'completed', g / 3, 1, 'tool/' || g % 3, 1, '{"status": 201}'
		 FROM generate_series(1, 300000) g ORDER BY 3`,
		`ANALYZE ledger`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	var key string
	if err := conn.QueryRow(ctx, `SELECT effect_key FROM ledger WHERE task_id = 777 LIMIT 1`).Scan(&key); err != nil {
		t.Fatal(err)
	}
	for _, prefix := range []string{key[:minPrefix], key[:12], key} {
		for _, mode := range plancheck.Modes {
			t.Run(fmt.Sprintf("%d/%s", len(prefix), mode), func(t *testing.T) {
				plan, err := plancheck.Explain(ctx, conn, mode, findByKeySQL, prefix, int64(0), "", "", 50)
				if err != nil {
					t.Fatal(err)
				}
				if err := plancheck.Reads(plan, "ledger", "ledger_key_prefix_idx"); err != nil {
					t.Error(err)
				}
			})
		}
	}
}
