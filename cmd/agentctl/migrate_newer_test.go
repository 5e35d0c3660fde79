package main

import (
	"context"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/migrations"
)

// A database a newer release migrated is said to be so by status, up and
// down, which has none of its down migrations: not "up to date", not
// goose's "version not found".
func TestMigrateOnANewerSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.URL(t)
	db := testdb.Open(t, url)
	m, err := migrations.New(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	newer := m.Latest() + 1
	m.Close()
	if _, err := db.Exec(ctx, `INSERT INTO `+migrations.TableName+` (version_id, is_applied) VALUES ($1, true)`, newer); err != nil {
		t.Fatal(err)
	}
	want := "newer than this agentctl knows"
	for _, args := range [][]string{{"migrate", "status"}, {"migrate", "up"}, {"migrate", "down", "--yes"}} {
		code, out, errOut := agentctlAt(url, args...)
		if !strings.Contains(out+errOut, want) || (args[1] == "down") != (code == 1) {
			t.Errorf("agentctl %s: exit %d, %q %q; want it to say the schema is %s", strings.Join(args, " "), code, out, errOut, want)
		}
	}
	var n int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM `+migrations.TableName+` WHERE version_id = $1`, newer).Scan(&n); err != nil || n != 1 {
		t.Fatalf("the newer version's row: %d (%v)", n, err)
	}
}
