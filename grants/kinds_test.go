package grants_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/grants"
)

// Revoking the last kind named leaves none: an emptied list never widens
// to every kind, stored and read back included. Every kind is allowed
// only when written so.
func TestEmptiedKindsAllowNone(t *testing.T) {
	g := &grants.Grant{Kinds: []string{"echo"}}
	g.Kinds = slices.DeleteFunc(g.Kinds, func(k string) bool { return k == "echo" })
	for _, when := range []string{"in memory", "stored"} {
		if when == "stored" {
			doc, err := json.Marshal(g)
			if err != nil {
				t.Fatal(err)
			}
			g = new(grants.Grant)
			if err := json.Unmarshal(doc, g); err != nil {
				t.Fatal(err)
			}
		}
		if g.AllowsKind("echo") || g.AllowsKind("steps") {
			t.Errorf("%s: a grant whose last kind was revoked allows kinds", when)
		}
		if err := g.Allow("acme", grants.Need{Kind: "steps"}); err == nil || !strings.Contains(err.Error(), `no grant for kind "steps"`) {
			t.Errorf("%s: %v, want the kind refused", when, err)
		}
	}
	if !(&grants.Grant{AllKinds: true}).AllowsKind("steps") || !grants.Default("acme").AllowsKind("steps") {
		t.Error("all_kinds and the default grant allow every kind")
	}
}

// A stored document without a kinds key was written when no kinds meant
// every kind (before 00029, or by an older agentctl or agentd): it still
// means every kind. One with kinds [] or null means none.
func TestStoredKinds(t *testing.T) {
	for doc, every := range map[string]bool{
		`{"tools": ["http_request"]}`:             true,
		`{}`:                                      true,
		`{"kinds": []}`:                           false,
		`{"kinds": null}`:                         false,
		`{"kinds": [], "all_kinds": true}`:        true,
		`{"kinds": ["echo"]}`:                     false,
		`{"kinds": ["echo"], "all_kinds": false}`: false,
	} {
		var g grants.Grant
		if err := json.Unmarshal([]byte(doc), &g); err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		if g.AllowsKind("steps") != every {
			t.Errorf("%s: allows every kind %v, want %v", doc, g.AllowsKind("steps"), every)
		}
	}
	doc, err := json.Marshal(&grants.Grant{Tools: []string{"notify"}})
	if err != nil || !strings.Contains(string(doc), `"kinds":["!none"]`) {
		t.Errorf("stored as %s (%v): kinds is always written, no kind as [\"!none\"]", doc, err)
	}
	doc, err = json.Marshal(&grants.Grant{AllKinds: true})
	if err != nil || !strings.Contains(string(doc), `"kinds":[]`) || !strings.Contains(string(doc), `"all_kinds":true`) {
		t.Errorf("every kind stored as %s (%v)", doc, err)
	}
}

// oldGrant is the kinds of a grant as an agentledger before all_kinds read
// them (an older agentd or agentctl in a rolling upgrade, or after
// migration 00029's Down): no kinds is every kind.
type oldGrant struct {
	All   bool     `json:"all,omitempty"`
	Kinds []string `json:"kinds,omitempty"`
}

func (g *oldGrant) allowsKind(kind string) bool {
	return g.All || len(g.Kinds) == 0 || slices.Contains(g.Kinds, kind)
}

// A grant of no kind is stored so that an older version reads it as no
// kind too (a kind nothing has), not as every kind; read back, it is the
// empty list, and "!none" is shown nowhere. Every kind and the kinds named
// read the same in both versions.
func TestStoredKindsReadByOlderVersions(t *testing.T) {
	for _, c := range []struct {
		name  string
		g     grants.Grant
		allow []string // the real kinds the grant allows, of echo and steps
	}{
		{"no kind", grants.Grant{Tools: []string{"http_request"}}, nil},
		{"every kind", grants.Grant{AllKinds: true}, []string{"echo", "steps"}},
		{"named", grants.Grant{Kinds: []string{"echo"}}, []string{"echo"}},
		{"all", grants.Grant{All: true}, []string{"echo", "steps"}},
	} {
		doc, err := json.Marshal(&c.g)
		if err != nil {
			t.Fatal(err)
		}
		var old oldGrant
		var now grants.Grant
		if err := json.Unmarshal(doc, &old); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(doc, &now); err != nil {
			t.Fatal(err)
		}
		for _, kind := range []string{"echo", "steps"} {
			want := slices.Contains(c.allow, kind)
			if old.allowsKind(kind) != want || now.AllowsKind(kind) != want {
				t.Errorf("%s (%s): %s allowed by an older version %v, by this one %v, want %v", c.name, doc, kind, old.allowsKind(kind), now.AllowsKind(kind), want)
			}
		}
		if slices.Contains(now.Kinds, grants.NoKinds) {
			t.Errorf("%s: read back as %q", c.name, now.Kinds)
		}
	}
	// An older agentctl adding a kind to a grant of none keeps the marker
	// beside it; it reads back as that kind alone.
	var g grants.Grant
	if err := json.Unmarshal([]byte(`{"kinds": ["!none", "echo"]}`), &g); err != nil || !slices.Equal(g.Kinds, []string{"echo"}) || g.AllKinds {
		t.Errorf("read %+v (%v), want echo alone", g, err)
	}
	if err := (&grants.Grant{Kinds: []string{grants.NoKinds}}).Validate(); !errors.Is(err, agentledger.ErrInvalid) {
		t.Errorf("a grant naming %q: %v, want invalid", grants.NoKinds, err)
	}
}

// The config file: a [grant.*] table without kinds keeps the default's
// every kind, kinds = ["all"] is every kind, kinds = [] none; "all" is not
// a kind name to grant with others, nor to store.
func TestKindsFromConfig(t *testing.T) {
	for _, c := range []struct {
		kinds   []string
		written bool
		every   bool
		named   []string
	}{
		{nil, false, true, nil},
		{[]string{"all"}, true, true, nil},
		{nil, true, false, nil},
		{[]string{"echo", "steps"}, true, false, []string{"echo", "steps"}},
	} {
		g := &grants.Grant{Kinds: c.kinds}
		if err := g.KindsFromConfig(c.written); err != nil {
			t.Fatalf("%v: %v", c.kinds, err)
		}
		if g.AllKinds != c.every || !slices.Equal(g.Kinds, c.named) || g.Validate() != nil {
			t.Errorf("kinds %v written %v: %+v", c.kinds, c.written, g)
		}
	}
	if err := (&grants.Grant{Kinds: []string{"all", "echo"}}).KindsFromConfig(true); !errors.Is(err, agentledger.ErrInvalid) {
		t.Errorf(`["all", "echo"]: %v, want invalid`, err)
	}
	if err := (&grants.Grant{Kinds: []string{"all"}}).Validate(); !errors.Is(err, agentledger.ErrInvalid) || !strings.Contains(err.Error(), "all_kinds") {
		t.Errorf(`a stored "all": %v, want invalid naming all_kinds`, err)
	}
}

func TestDiff(t *testing.T) {
	cfg := &grants.Grant{AllKinds: true, Tools: []string{"http_request", "notify"},
		Hosts: []grants.Host{{URL: "https://API.example.com"}}}
	op := &grants.Grant{Tools: []string{"http_request"}, Hosts: []grants.Host{{URL: "https://api.example.com:443"}}}
	got := grants.Diff(cfg, op)
	want := []string{"kinds: config every kind, in force []", "tools: config [http_request notify], in force [http_request]"}
	if !slices.Equal(got, want) {
		t.Errorf("diff %q, want %q", got, want)
	}
	same := &grants.Grant{Tools: []string{"notify", "http_request"}, AllKinds: true, Hosts: op.Hosts}
	if d := grants.Diff(cfg, same); len(d) != 0 {
		t.Errorf("the same grant in another order: %q", d)
	}
}
