package migrations_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/internal/testdb"
)

// Grants stored before 00029 with no kinds allowed every kind, and keep
// doing so once it has run: their documents say all_kinds. A grant that
// named kinds keeps exactly those, the operator's grant stays as it was,
// and the migration can run again. Who set them is unknown (NULL).
func TestGrantsWithoutKindsKeepEveryKind(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.Open(t, testdb.Empty(t))
	if _, err := newMigrator(t, pool).UpTo(ctx, 28); err != nil {
		t.Fatal(err)
	}
	// As an agentledger of 00028 wrote them: kinds left out when empty.
	if _, err := pool.Exec(ctx, `INSERT INTO tenant_grants (tenant, grant_doc) VALUES
		('acme', '{"tools": ["http_request"]}'), ('globex', '{"kinds": ["echo"]}'), ('initech', '{}')`); err != nil {
		t.Fatal(err)
	}
	m := newMigrator(t, pool)
	if _, err := m.UpTo(ctx, 29); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		for tenant, want := range map[string]string{
			"acme":    `{"kinds": [], "tools": ["http_request"], "all_kinds": true}`,
			"globex":  `{"kinds": ["echo"]}`,
			"initech": `{"kinds": [], "all_kinds": true}`,
			"default": `{"all": true}`,
		} {
			var doc string
			var setBy *string
			if err := pool.QueryRow(ctx, `SELECT grant_doc::text, set_by FROM tenant_grants WHERE tenant = $1`, tenant).Scan(&doc, &setBy); err != nil {
				t.Fatalf("%s: %s: %v", when, tenant, err)
			}
			if doc != want || setBy != nil {
				t.Errorf("%s: %s: %s set by %v, want %s set by nobody known", when, tenant, doc, setBy, want)
			}
			var g grants.Grant
			if err := json.Unmarshal([]byte(doc), &g); err != nil {
				t.Fatal(err)
			}
			if every := tenant != "globex"; g.AllowsKind("steps") != every || !g.AllowsKind("echo") {
				t.Errorf("%s: %s (%s) allows steps: %v, want %v", when, tenant, doc, g.AllowsKind("steps"), every)
			}
		}
	}
	check("after 00029")
	// Each statement may run again (a migration stopped half-way).
	stmts, _ := upStatements(t, "00029_grant_set_by.sql")
	for _, s := range stmts {
		if _, err := pool.Exec(ctx, s); err != nil {
			t.Fatalf("again: %s: %v", s, err)
		}
	}
	check("run again")
	if _, err := pool.Exec(ctx, `INSERT INTO tenant_grants (tenant, grant_doc, set_by) VALUES ('x', '{}', 'someone')`); err == nil {
		t.Error("set_by took a value other than operator and config")
	}
}
