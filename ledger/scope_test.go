package ledger_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentledger/agentledger/internal/test/testenv"
	"github.com/agentledger/agentledger/ledger"
)

// keyOf performs a keyed effect at step for attempt a through l and returns
// the downstream key its call was given; the call fails (a timeout: nothing
// recorded) when fail is set, so that a later attempt sends it again.
func keyOf(t *testing.T, l *ledger.Ledger, a ledger.Attempt, step string, fail bool) string {
	t.Helper()
	var key string
	_, err := l.Do(context.Background(), a, effect(ledger.Keyed, step, `{"amount":5}`,
		func(_ context.Context, c ledger.Call) (ledger.Result, error) {
			key = c.DownstreamKey("api")
			if fail {
				return ledger.Result{}, errors.New("timeout")
			}
			return ledger.Result{Status: 201}, nil
		}))
	if (err != nil) != fail || key == "" {
		t.Fatalf("%s: %v, key %q", step, err, key)
	}
	return key
}

// Two databases number their tasks alike, yet the downstream keys of their
// task 1's effect differ: each carries its database's identity (migration
// 00042), so that a provider both call (staging and production on one
// account, a database rebuilt from nothing) never answers one with the
// other's charge. Within one database the key is the same at every attempt
// and in every process. A database that had tasks when it was migrated
// keeps unscoped keys (al1-) until its scope is set, and then scopes only
// the tasks from its mark on: a call of an older task may have gone out
// under the unscoped key already.
func TestDownstreamKeysCarryTheDatabase(t *testing.T) {
	t.Parallel()
	one, other := &env{testenv.NewSmallIDs(t)}, &env{testenv.NewSmallIDs(t)}
	if a, b := one.task(), other.task(); a != b {
		t.Fatalf("task ids %d and %d: the test needs the same id in both", a, b)
	}
	a1, _ := one.claim("w")
	a2, _ := other.claim("w")
	k1 := keyOf(t, one.Ledger, a1, "tool/0", true)
	k2 := keyOf(t, other.Ledger, a2, "tool/0", false)
	if k1 == k2 || !strings.HasPrefix(k1, "al2-") || !strings.HasPrefix(k2, "al2-") {
		t.Fatalf("task 1's key %s in one database and %s in the other: want two scoped keys", k1, k2)
	}
	// The call failed: its next attempt, in another process, sends it
	// again under the same key.
	again, _ := one.expireAndReclaim("w2")
	if k := keyOf(t, ledger.New(one.DB), again, "tool/0", false); k != k1 {
		t.Fatalf("the next attempt's key %s, want %s", k, k1)
	}

	// A database whose keys are not scoped (migrated with tasks in it).
	old := &env{testenv.NewSmallIDs(t)}
	ctx := context.Background()
	if _, err := old.DB.Exec(ctx, `UPDATE installation SET keys_scoped_from = NULL`); err != nil {
		t.Fatal(err)
	}
	first := old.task()
	a, _ := old.claim("w")
	before := keyOf(t, ledger.New(old.DB), a, "tool/0", true)
	if !strings.HasPrefix(before, "al1-") {
		t.Fatalf("an unscoped database's key %s, want al1-", before)
	}
	// Scoped from the next task on: the first keeps its key.
	if _, err := old.DB.Exec(ctx, `UPDATE installation SET keys_scoped_from = $1`, first+1); err != nil {
		t.Fatal(err)
	}
	l := ledger.New(old.DB) // a daemon started after
	retried, _ := old.expireAndReclaim("w2")
	if k := keyOf(t, l, retried, "tool/0", false); k != before {
		t.Fatalf("the older task's key after scoping: %s, want %s", k, before)
	}
	old.task()
	b, _ := old.claim("w")
	if k := keyOf(t, l, b, "tool/0", false); !strings.HasPrefix(k, "al2-") {
		t.Fatalf("a task after the mark: %s, want a scoped key", k)
	}
}
