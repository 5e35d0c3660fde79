package claims

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentledger/agentledger/internal/test/plancheck"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

// A look for strays reads at most its limit of due tasks and the next goes
// on where it stopped, in index order, so that looks at a large backlog
// cover it in turns; a look that reads to the end sends the next back to
// the start. Tasks not due, not runnable or of another queue are not read.
func TestLookForStraysGoesOnWhereItStopped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := New(testdb.New(t))
	for _, p := range []EnqueueParams{
		{Tenant: "a", Kind: "noop"}, {Tenant: "a", Kind: "noop"},
		{Tenant: "b", Kind: "bogus"}, {Tenant: "c", Kind: "noop"},
		{Tenant: "d", Kind: "other"}, {Tenant: "d", Kind: "other"},
		{Tenant: "b", Kind: "bogus", RunAt: time.Now().Add(time.Hour)}, // not due
		{Tenant: "b", Kind: "bogus", Queue: "elsewhere"},
	} {
		if _, err := s.Enqueue(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	served := []string{"noop"}
	show := func(l StrayLook) string {
		var b strings.Builder
		for _, st := range l.Strays {
			fmt.Fprintf(&b, "%s:%d ", st.Kind, st.Tasks)
		}
		return fmt.Sprintf("read %d whole %t strays [%s] next %t", l.Read, l.Whole, strings.TrimSpace(b.String()), l.Next.set)
	}

	var place StrayPlace
	for i, want := range []string{
		"read 2 whole false strays [] next true",        // a's two
		"read 2 whole false strays [bogus:1] next true", // b, c
		"read 2 whole false strays [other:2] next true", // d's two: the limit, so the next look goes on
		"read 0 whole false strays [] next false",       // the end: back to the start
		"read 2 whole false strays [] next true",        // a's two again
	} {
		l, err := s.LookForStrays(ctx, "default", served, place, 2)
		if err != nil {
			t.Fatal(err)
		}
		if got := show(l); got != want {
			t.Fatalf("look %d: %s, want %s", i+1, got, want)
		}
		place = l.Next
	}

	l, err := s.LookForStrays(ctx, "default", served, StrayPlace{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := show(l), "read 6 whole true strays [bogus:1 other:2] next false"; got != want {
		t.Fatalf("a look at the whole queue: %s, want %s", got, want)
	}
	if _, err := s.LookForStrays(ctx, "default", served, StrayPlace{}, 0); err == nil {
		t.Fatal("a look of no tasks was accepted")
	}
}

// The place a look starts from is an index condition of its read of
// tasks_runnable_tenant_idx, in both plan modes and whatever the
// statistics: a look past the millionth task starts there, instead of
// reading the queue from its first task and skipping what comes before.
func TestStraysReadFromTheirPlace(t *testing.T) {
	ctx := context.Background()
	for _, size := range trapSizes {
		conn, _, _ := plannerTrap(t, size.finished, size.running)
		if _, err := conn.Exec(ctx, `INSERT INTO tasks (kind) SELECT 'noop' FROM generate_series(1, 2000); ANALYZE tasks`); err != nil {
			t.Fatal(err)
		}
		for _, mode := range plancheck.Modes {
			t.Run(size.name+"/"+mode, func(t *testing.T) {
				plan, err := plancheck.Explain(ctx, conn, mode, straysSQL, "default", []string{"noop"},
					"default", int16(0), time.Now().Add(-time.Hour), int64(1000), StrayLookSize)
				if err != nil {
					t.Fatal(err)
				}
				reads := 0
				plan.Walk(func(n *plancheck.Node, _ []*plancheck.Node) {
					if n.Relation != "tasks" {
						return
					}
					reads++
					if n.Index != "tasks_runnable_tenant_idx" || !strings.Contains(n.IndexCond, "ROW(tasks.tenant, tasks.priority, tasks.run_at, tasks.id) > ROW(") {
						t.Errorf("%s of tasks through %q (cond %q): not a read from the look's place\n%s", n.NodeType, n.Index, n.IndexCond, plan)
					}
				})
				if reads != 1 {
					t.Errorf("tasks read %d times, want once\n%s", reads, plan)
				}
			})
		}
	}
}
