package grants_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/internal/test/testdb"
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

// countingDB counts the grants read.
type countingDB struct {
	grants.DB
	reads *atomic.Int64
}

func (d countingDB) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	d.reads.Add(1)
	return d.DB.QueryRow(ctx, sql, args...)
}

// Without a LISTEN session (--pgbouncer, or the session lost) the cache
// keeps a grant for a second: reads at every effect cost one query per
// tenant a second, and a revoke is seen within the second. With a session
// the time does not matter; losing it drops everything.
func TestCacheWithoutSessionKeepsASecond(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.Open(t, testdb.URL(t))
	var reads atomic.Int64
	s := grants.NewStore(db)
	c := grants.NewCache(grants.NewStore(countingDB{db, &reads}))
	now := time.Unix(1_700_000_000, 0)
	c.SetClock(func() time.Time { return now })
	tools := func(want string, wantReads int64) {
		t.Helper()
		g, err := c.For(ctx, "acme")
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(g.Tools, ","); got != want || reads.Load() != wantReads {
			t.Fatalf("at %s: tools %q after %d reads, want %q after %d", now.Format(time.StampMilli), got, reads.Load(), want, wantReads)
		}
	}
	put := func(tool string) {
		t.Helper()
		if err := s.Put(ctx, "acme", &grants.Grant{Tools: []string{tool}}); err != nil {
			t.Fatal(err)
		}
	}
	put("a")
	tools("a", 1)
	for range 100 { // effects within the second: no query
		tools("a", 1)
	}
	put("b") // revoked and replaced, no session to say so
	now = now.Add(999 * time.Millisecond)
	tools("a", 1)
	now = now.Add(time.Millisecond)
	tools("b", 2) // a second after the read began: read again
	tools("b", 2)
	c.Changed("acme") // heard some other way: dropped at once
	tools("b", 3)

	c.Listening(true)
	tools("b", 4)
	now = now.Add(time.Hour)
	tools("b", 4) // live: kept until a change is heard
	put("c")
	c.Listening(false)
	tools("c", 5)
}

// Serving a grant held while the session is up allocates nothing.
func TestCacheLiveAllocatesNothing(t *testing.T) {
	ctx := context.Background()
	c := grants.NewCache(grants.NewStore(testdb.Open(t, testdb.URL(t))))
	c.Listening(true)
	if _, err := c.For(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = c.For(ctx, "acme") }); n != 0 {
		t.Errorf("%v allocations a read, want 0", n)
	}
}
