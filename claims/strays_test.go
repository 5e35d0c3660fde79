package claims_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

// Strays counts the due tasks of kinds a pool does not serve among the
// first tasks of each queue in claim order: a window that ends before the
// strays finds none, one that reaches part of them counts that part, and
// tasks not yet due are not strays.
func TestStraysAreCountedAtTheHeadOfEachQueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	if _, err := db.Exec(ctx, `INSERT INTO tasks (queue, tenant, kind, run_at)
		SELECT q, 'default', CASE WHEN g <= 20 THEN 'noop' ELSE 'bogus' END,
			CASE WHEN g <= 23 THEN now() - interval '1 hour' + g * interval '1 second' ELSE now() + interval '1 hour' END
		FROM generate_series(1, 25) g, unnest('{default,mail}'::text[]) q`); err != nil {
		t.Fatal(err)
	}
	s := claims.New(db)
	for _, c := range []struct {
		window int
		want   []claims.Stray
	}{
		{20, nil},
		{21, []claims.Stray{{Queue: "default", Kind: "bogus", Tasks: 1}, {Queue: "mail", Kind: "bogus", Tasks: 1}}},
		{10000, []claims.Stray{{Queue: "default", Kind: "bogus", Tasks: 3}, {Queue: "mail", Kind: "bogus", Tasks: 3}}},
	} {
		got, err := s.Strays(ctx, []string{"default", "mail"}, []string{"noop"}, c.window)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("window %d: strays %+v, want %+v", c.window, got, c.want)
		}
	}
	if _, err := s.Strays(ctx, []string{"default"}, []string{"noop"}, 0); !errors.Is(err, agentledger.ErrInvalid) {
		t.Errorf("a window of 0: %v, want ErrInvalid", err)
	}
}
