package daemon

import (
	"context"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/migrations"
)

// A daemon is ready on its own schema and on a newer one (an upgrade
// migrates first, then restarts the daemons one by one, the older ones
// serving meanwhile), and not on an older one.
func TestReadyOnItsSchemaOrANewer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	if p := schemaProblem(ctx, db); p != "" {
		t.Fatalf("on its own schema: %q, want ready", p)
	}
	m, err := migrations.New(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	latest := m.Latest()
	if _, err := db.Exec(ctx, `INSERT INTO `+migrations.TableName+` (version_id, is_applied) VALUES ($1, true)`, latest+1); err != nil {
		t.Fatal(err)
	}
	if p := schemaProblem(ctx, db); p != "" {
		t.Errorf("on a newer schema: %q, want ready", p)
	}
	if _, err := db.Exec(ctx, `DELETE FROM `+migrations.TableName+` WHERE version_id >= $1`, latest); err != nil {
		t.Fatal(err)
	}
	if p := schemaProblem(ctx, db); !strings.Contains(p, "this agentd needs") {
		t.Errorf("on an older schema: %q, want not ready, saying the version it needs", p)
	}
}
