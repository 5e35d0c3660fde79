package grants_test

import (
	"context"
	"testing"

	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/internal/testdb"
)

// The cache serves a grant it read while a LISTEN session is up, drops it
// when its change is notified, and reads through while no session is up.
func TestCacheFollowsChanges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.Open(t, testdb.URL(t))
	s := grants.NewStore(db)
	c := grants.NewCache(s)
	tools := func() []string {
		t.Helper()
		g, err := c.For(ctx, "acme")
		if err != nil {
			t.Fatal(err)
		}
		return g.Tools
	}
	put := func(tool string) {
		t.Helper()
		if err := s.Put(ctx, "acme", &grants.Grant{Tools: []string{tool}}); err != nil {
			t.Fatal(err)
		}
	}
	put("a")
	// No session: every read goes to the store.
	put("b")
	if got := tools(); len(got) != 1 || got[0] != "b" {
		t.Fatalf("without a session: %v, want [b]", got)
	}
	c.Listening(true)
	if got := tools(); got[0] != "b" {
		t.Fatalf("%v", got)
	}
	put("c") // not yet heard: the cached grant stands
	if got := tools(); got[0] != "b" {
		t.Fatalf("cached: %v, want [b] until the change is heard", got)
	}
	c.Changed("acme")
	if got := tools(); got[0] != "c" {
		t.Fatalf("after the change: %v, want [c]", got)
	}
	put("d")
	c.Listening(false) // the session is lost: nothing cached is trusted
	if got := tools(); got[0] != "d" {
		t.Fatalf("after the session was lost: %v, want [d]", got)
	}
}
