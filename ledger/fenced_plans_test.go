package ledger_test

import (
	"context"
	"testing"

	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/plancheck"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/notify/outbox"
)

// The fenced statements find the fencing row by its primary key under
// statistics that saw no running task and no pending event, custom plan or
// generic, and the effect's row by the ledger's key (a step's rows by the
// journal's index).
func TestFencedPlansReadByKey(t *testing.T) {
	ctx := context.Background()
	conn, tr := plancheck.TrapConn(t, testdb.URL(t), 200_000, 1_200, 1_000)
	ids, tokens, events := tr.IDs, tr.Tokens, tr.Events
	for _, f := range []struct {
		name, table, index string
		q                  map[string]string
		id, token          int64
	}{
		{"task", "tasks", "tasks_pkey", ledger.FencedSQL(claims.LeaseFence{}), ids[0], tokens[0]},
		{"event", "outbox", "outbox_pkey", ledger.FencedSQL(outbox.ClaimFence{}), events[0], 1},
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
			"insertKeyedOutcomes": {[]string{"default", "default"}, []string{"http.post", "http.post"}, []string{"k1", "k2"},
				[][]byte{[]byte("h"), []byte("h")}, []string{"keyed", "keyed"}, []int64{ids[0], ids[0]}, []int32{1, 1},
				[]string{"0", "1"}, []int64{f.token, f.token}, []string{"completed", "completed"}, []*string{nil, nil},
				[]string{"", ""}, []string{"", ""}, []int64{f.id, f.id}},
			"record":       append(pk[:3:3], "completed", "{}", "", "", f.token, f.id),
			"landed":       append(pk[:3:3], f.token, f.id),
			"unbuilt":      append(pk[:3:3], "pure", ids[0], 1, "compensate/0", f.token, f.id, "no such field"),
			"clearUnbuilt": {"default", ids[0], 1, "compensate/0", f.token, f.id},
		}
		sql := f.q
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
					index := "ledger_pkey"
					if name == "clearUnbuilt" || name == "unbuilt" { // a step's rows, by the journal's index
						index = "ledger_journal_idx"
					}
					if err := plancheck.Reads(plan, "ledger", index); err != nil {
						t.Error(err)
					}
				})
			}
		}
	}
}
