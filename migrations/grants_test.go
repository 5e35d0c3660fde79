package migrations_test

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/internal/test/testdb"
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

// 00029's Down takes the grants back to the meaning before all_kinds, no
// kinds for every kind, without widening a grant of no kind: it keeps none
// as ["!none"], a kind nothing has, for the older version and for this one
// after Up again. Every kind and the kinds named stay as they were.
func TestGrantsDownKeepNoKind(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.Open(t, testdb.Empty(t))
	m := newMigrator(t, pool)
	if _, err := m.UpTo(ctx, 29); err != nil {
		t.Fatal(err)
	}
	s := grants.NewStore(pool)
	for tenant, g := range map[string]*grants.Grant{
		"acme":    {Tools: []string{"http_request"}},
		"globex":  {AllKinds: true, Tools: []string{"notify"}},
		"initech": {Kinds: []string{"echo"}},
	} {
		if err := s.Put(ctx, tenant, g); err != nil {
			t.Fatal(err)
		}
	}
	// As this version wrote no kind before it wrote "!none".
	if _, err := pool.Exec(ctx, `INSERT INTO tenant_grants (tenant, grant_doc, set_by) VALUES ('hooli', '{"kinds": []}', 'operator')`); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"acme": nil, "globex": {"echo", "steps"}, "initech": {"echo"}, "hooli": nil, "default": {"echo", "steps"}}
	check := func(when string, read func(doc []byte) (func(string) bool, error)) {
		t.Helper()
		for tenant, allow := range want {
			var doc []byte
			if err := pool.QueryRow(ctx, `SELECT grant_doc FROM tenant_grants WHERE tenant = $1`, tenant).Scan(&doc); err != nil {
				t.Fatalf("%s: %s: %v", when, tenant, err)
			}
			allows, err := read(doc)
			if err != nil {
				t.Fatalf("%s: %s: %v", when, tenant, err)
			}
			for _, kind := range []string{"echo", "steps"} {
				if allows(kind) != slices.Contains(allow, kind) {
					t.Errorf("%s: %s (%s) allows %s: %v, want %v", when, tenant, doc, kind, allows(kind), !allows(kind))
				}
			}
			if bytes.Contains(doc, []byte("all_kinds")) && when == "after Down" {
				t.Errorf("%s: %s still says all_kinds: %s", when, tenant, doc)
			}
		}
	}
	// An agentledger before 00029: no kinds is every kind.
	old := func(doc []byte) (func(string) bool, error) {
		var g struct {
			All   bool     `json:"all"`
			Kinds []string `json:"kinds"`
		}
		err := json.Unmarshal(doc, &g)
		return func(k string) bool { return g.All || len(g.Kinds) == 0 || slices.Contains(g.Kinds, k) }, err
	}
	now := func(doc []byte) (func(string) bool, error) {
		var g grants.Grant
		err := json.Unmarshal(doc, &g)
		return g.AllowsKind, err
	}
	if _, err := m.DownTo(ctx, 28); err != nil {
		t.Fatal(err)
	}
	check("after Down", old)
	if _, err := m.UpTo(ctx, 29); err != nil {
		t.Fatal(err)
	}
	check("after Up again", now)
}
