package grants_test

import (
	"context"
	"slices"
	"testing"

	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/internal/testdb"
)

// A configuration seeds a grant and may change what it seeded, but never
// replaces the operator's: Seed reports the operator's grant it kept, and
// Delete hands the grant back to the configuration.
func TestSeedNeverReplacesTheOperator(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	s := grants.NewStore(db)
	cfg := &grants.Grant{AllKinds: true, Tools: []string{"http_request"}}
	setBy := func(want string, tools ...string) {
		t.Helper()
		r, err := s.Record(ctx, "acme")
		if err != nil || r == nil {
			t.Fatalf("record: %+v %v", r, err)
		}
		if r.SetBy != want || !slices.Equal(r.Grant.Tools, tools) || r.UpdatedAt.IsZero() {
			t.Fatalf("acme's grant %+v set by %q at %s, want tools %v set by %q", r.Grant, r.SetBy, r.UpdatedAt, tools, want)
		}
	}
	// Absent: seeded.
	if got, err := s.Seed(ctx, "acme", cfg); err != nil || !got.Stored || got.Kept != nil {
		t.Fatalf("first seed: %+v %v", got, err)
	}
	setBy(grants.SetByConfig, "http_request")
	// The configuration changed: its own grant is replaced.
	cfg2 := &grants.Grant{AllKinds: true, Tools: []string{"http_request", "notify"}}
	if got, err := s.Seed(ctx, "acme", cfg2); err != nil || !got.Stored {
		t.Fatalf("second seed: %+v %v", got, err)
	}
	setBy(grants.SetByConfig, "http_request", "notify")
	// The operator revokes: the next start keeps it and says what differs.
	if _, err := s.Update(ctx, "acme", func(g *grants.Grant) { g.Tools = nil }); err != nil {
		t.Fatal(err)
	}
	got, err := s.Seed(ctx, "acme", cfg2)
	if err != nil || got.Stored || got.Kept == nil || got.Kept.SetBy != grants.SetByOperator {
		t.Fatalf("seed over the operator's: %+v %v", got, err)
	}
	if d := grants.Diff(cfg2, got.Kept.Grant); !slices.Equal(d, []string{"tools: config [http_request notify], in force []"}) {
		t.Errorf("diff %q", d)
	}
	setBy(grants.SetByOperator)
	// An operator's grant equal to the configuration's is kept quietly.
	if err := s.Put(ctx, "acme", cfg2); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Seed(ctx, "acme", cfg2); err != nil || got.Stored || got.Kept != nil {
		t.Fatalf("seed over an equal operator's grant: %+v %v", got, err)
	}
	// Handed back: the configuration seeds it again.
	if gone, err := s.Delete(ctx, "acme"); err != nil || !gone {
		t.Fatalf("delete: %v %v", gone, err)
	}
	if gone, err := s.Delete(ctx, "acme"); err != nil || gone {
		t.Fatalf("delete again: %v %v, want nothing to delete", gone, err)
	}
	if g, err := s.For(ctx, "acme"); err != nil || !g.AllKinds || len(g.Tools) != 0 {
		t.Fatalf("after delete: %+v %v, want the default", g, err)
	}
	if got, err := s.Seed(ctx, "acme", cfg); err != nil || !got.Stored {
		t.Fatalf("seed after delete: %+v %v", got, err)
	}
	setBy(grants.SetByConfig, "http_request")
	// A grant stored before 00029 (who set it unknown) is the
	// configuration's to replace, as every start did then.
	if _, err := db.Exec(ctx, `UPDATE tenant_grants SET set_by = NULL, grant_doc = '{"tools": ["x"]}' WHERE tenant = 'acme'`); err != nil {
		t.Fatal(err)
	}
	setBy(grants.SetByUnknown, "x")
	if got, err := s.Seed(ctx, "acme", cfg); err != nil || !got.Stored {
		t.Fatalf("seed over a grant of unknown origin: %+v %v", got, err)
	}
	setBy(grants.SetByConfig, "http_request")
}
