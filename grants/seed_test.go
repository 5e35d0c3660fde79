package grants_test

import (
	"context"
	"slices"
	"testing"

	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/internal/test/testdb"
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
	// A grant stored before 00029 (who set it unknown) may be an
	// operator's revoke: when it differs it is kept, and reported; when it
	// is the configuration's grant, it becomes the configuration's.
	if _, err := db.Exec(ctx, `UPDATE tenant_grants SET set_by = NULL, grant_doc = '{"tools": ["x"]}' WHERE tenant = 'acme'`); err != nil {
		t.Fatal(err)
	}
	setBy(grants.SetByUnknown, "x")
	got, err = s.Seed(ctx, "acme", cfg)
	if err != nil || got.Stored || got.Kept == nil || got.Kept.SetBy != grants.SetByUnknown {
		t.Fatalf("seed over a different grant of unknown origin: %+v %v, want it kept", got, err)
	}
	if d := grants.Diff(cfg, got.Kept.Grant); !slices.Equal(d, []string{"tools: config [http_request], in force [x]"}) {
		t.Errorf("diff %q", d)
	}
	setBy(grants.SetByUnknown, "x")
	if _, err := db.Exec(ctx, `UPDATE tenant_grants SET grant_doc = '{"tools": ["http_request"]}' WHERE tenant = 'acme'`); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Seed(ctx, "acme", cfg); err != nil || !got.Stored || got.Kept != nil || got.Replaced != nil {
		t.Fatalf("seed over the same grant of unknown origin: %+v %v, want it the configuration's", got, err)
	}
	setBy(grants.SetByConfig, "http_request")
	// Another daemon's file (or this one, changed) replaces the
	// configuration's grant, and Seed says what it replaced.
	got, err = s.Seed(ctx, "acme", cfg2)
	if err != nil || !got.Stored || got.Replaced == nil || !slices.Equal(got.Replaced.Grant.Tools, []string{"http_request"}) {
		t.Fatalf("seed over another configuration's grant: %+v %v, want it replaced and reported", got, err)
	}
	if got, err := s.Seed(ctx, "acme", cfg2); err != nil || !got.Stored || got.Replaced != nil {
		t.Fatalf("seed over the same configuration's grant: %+v %v, want nothing reported", got, err)
	}
}

// HandToConfig leaves the grant in force, the configuration's from then
// on: never the default in between (it would allow every kind), and the
// next seed replaces it.
func TestHandToConfig(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	s := grants.NewStore(db)
	if r, err := s.HandToConfig(ctx, "acme"); err != nil || r != nil {
		t.Fatalf("none stored: %+v %v", r, err)
	}
	if err := s.Put(ctx, "acme", &grants.Grant{Kinds: []string{"echo"}}); err != nil {
		t.Fatal(err)
	}
	r, err := s.HandToConfig(ctx, "acme")
	if err != nil || r == nil || r.SetBy != grants.SetByConfig || !slices.Equal(r.Grant.Kinds, []string{"echo"}) {
		t.Fatalf("handed: %+v %v, want echo only, the configuration's", r, err)
	}
	if g, err := s.For(ctx, "acme"); err != nil || g.AllowsKind("steps") || !g.AllowsKind("echo") {
		t.Fatalf("in force after the hand-over: %+v %v, want echo only", g, err)
	}
	got, err := s.Seed(ctx, "acme", &grants.Grant{Kinds: []string{"steps"}})
	if err != nil || !got.Stored || got.Replaced == nil {
		t.Fatalf("seed after the hand-over: %+v %v", got, err)
	}
}
