package ledger

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agentledger/agentledger/internal/test/plancheck"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

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
				plan, err := plancheck.Explain(ctx, conn, mode, findByKeySQL, prefix, int64(0), "", "", 50, int64(0))
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
