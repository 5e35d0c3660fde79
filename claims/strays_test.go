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
// on where it stopped, in index order (tenant, priority, run_at, id: the
// looks' ends fall inside tenants and between priorities), so that looks
// at a large backlog cover it in turns; a look that reads to the end sends
// the next back to the start. Tasks not due, not runnable or of another
// queue are not read.
func TestLookForStraysGoesOnWhereItStopped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := New(testdb.New(t))
	for _, p := range []EnqueueParams{
		{Tenant: "a", Kind: "noop", Priority: 1}, {Tenant: "a", Kind: "bogus", Priority: 2}, {Tenant: "a", Kind: "noop", Priority: 1},
		{Tenant: "b", Kind: "noop"}, {Tenant: "b", Kind: "other", Priority: 5}, {Tenant: "b", Kind: "noop"},
		{Tenant: "b", Kind: "bogus", RunAt: time.Now().Add(time.Hour)}, // not due
		{Tenant: "b", Kind: "bogus", Queue: "elsewhere"},
	} {
		if _, err := s.Enqueue(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	running, err := s.Enqueue(ctx, EnqueueParams{Tenant: "a", Kind: "bogus"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.Exec(ctx, `UPDATE tasks SET state = 'running', lease_owner = 'w', lease_expires_at = now() + interval '1 minute' WHERE id = $1`, running.Task.ID); err != nil {
		t.Fatal(err)
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
		"read 2 whole false strays [] next true",        // a's two of priority 1
		"read 2 whole false strays [bogus:1] next true", // a's of priority 2, b's first of priority 0
		"read 2 whole false strays [other:1] next true", // b's second of priority 0, its of priority 5: the limit, so the next look goes on
		"read 0 whole false strays [] next false",       // the end: back to the start
		"read 2 whole false strays [] next true",        // a's two again
	} {
		l, err := s.LookForStrays(ctx, "default", served, nil, place, 2)
		if err != nil {
			t.Fatal(err)
		}
		if got := show(l); got != want {
			t.Fatalf("look %d: %s, want %s", i+1, got, want)
		}
		place = l.Next
	}

	l, err := s.LookForStrays(ctx, "default", served, nil, StrayPlace{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := show(l), "read 6 whole true strays [bogus:1 other:1] next false"; got != want {
		t.Fatalf("a look at the whole queue: %s, want %s", got, want)
	}
	if _, err := s.LookForStrays(ctx, "default", served, nil, StrayPlace{}, 0); err == nil {
		t.Fatal("a look of no tasks was accepted")
	}
}

// A look counts, by kind and needs, the tasks of kinds the pool does not
// serve and those of its kinds that need what its capabilities lack; a
// pool without capabilities (nil) runs any task of its kinds, and one that
// has them all lacks nothing.
func TestLookForStraysCountsUnmetNeeds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := New(testdb.New(t))
	for _, p := range []EnqueueParams{
		{Kind: "steps", Needs: []string{"tool:open_ticket"}},
		{Kind: "steps", Needs: []string{"tool:open_ticket"}},
		{Kind: "steps", Needs: []string{"origin:https://pay.example", "tool:open_ticket"}},
		{Kind: "steps", Needs: []string{"tool:http_request"}},
		{Kind: "steps"},
		{Kind: "bogus", Needs: []string{"tool:open_ticket"}},
	} {
		if _, err := s.Enqueue(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	show := func(caps []string) string {
		l, err := s.LookForStrays(ctx, "default", []string{"steps"}, caps, StrayPlace{}, 100)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, u := range l.Strays {
			fmt.Fprintf(&b, "%s %v:%d; ", u.Kind, u.Needs, u.Tasks)
		}
		return strings.TrimSpace(b.String())
	}
	const bogus = "bogus [tool:open_ticket]:1;" // not served: whatever the capabilities
	for _, c := range []struct {
		caps []string
		want string
	}{
		{[]string{"tool:http_request"}, bogus + " steps [origin:https://pay.example tool:open_ticket]:1; steps [tool:open_ticket]:2;"},
		{[]string{}, bogus + " steps [origin:https://pay.example tool:open_ticket]:1; steps [tool:http_request]:1; steps [tool:open_ticket]:2;"},
		{[]string{"tool:http_request", "tool:open_ticket"}, bogus + " steps [origin:https://pay.example tool:open_ticket]:1;"},
		{nil, bogus},
	} {
		if got := show(c.caps); got != c.want {
			t.Errorf("unmet with %v: %q, want %q", c.caps, got, c.want)
		}
	}
}

// A running task whose lease expired (its worker gone) is counted beside
// the due ones, apart, at every look: no pass reaches it otherwise; one
// whose lease holds is not.
func TestLookForStraysCountsTheStranded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := New(testdb.New(t))
	var ids []int64
	for range 3 {
		r, err := s.Enqueue(ctx, EnqueueParams{Kind: "steps", Needs: []string{"tool:open_ticket"}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.Task.ID)
	}
	for i, lease := range []string{"-1 minute", "1 minute"} {
		if _, err := s.db.Exec(ctx, `UPDATE tasks SET state = 'running', lease_owner = 'gone', lease_expires_at = now() + $2::interval WHERE id = $1`,
			ids[i], lease); err != nil {
			t.Fatal(err)
		}
	}
	for look := range 2 {
		l, err := s.LookForStrays(ctx, "default", []string{"steps"}, []string{}, StrayPlace{}, 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Strays) != 1 || l.Strays[0].Tasks != 1 || fmt.Sprint(l.Strays[0].IDs) != fmt.Sprint(ids[2:]) ||
			l.Strays[0].Stranded != 1 || fmt.Sprint(l.Strays[0].StrandedIDs) != fmt.Sprint(ids[:1]) {
			t.Fatalf("look %d: %+v, want tasks %d (expired) and %d (due)", look+1, l.Strays, ids[0], ids[2])
		}
	}
}

// A pass ends after StrayPassLooks looks even where tasks keep coming in
// past its place: the next look starts at the first due task again.
func TestAStrayPassEnds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := New(testdb.New(t))
	batch := make([]EnqueueParams, StrayPassLooks+10)
	for i := range batch {
		batch[i] = EnqueueParams{Kind: "noop"}
	}
	if _, err := s.EnqueueBatch(ctx, batch); err != nil {
		t.Fatal(err)
	}
	var place StrayPlace
	for i := 1; i <= StrayPassLooks; i++ {
		l, err := s.LookForStrays(ctx, "default", []string{"noop"}, nil, place, 1)
		if err != nil {
			t.Fatal(err)
		}
		if l.Read != 1 || l.Next.set != (i < StrayPassLooks) {
			t.Fatalf("look %d of a pass of %d read %d, next place set %t", i, StrayPassLooks, l.Read, l.Next.set)
		}
		place = l.Next
	}
}

// The place a look starts from is an index condition of its read of
// tasks_runnable_tenant_idx, in both plan modes and whatever the
// statistics: a look past the millionth task starts there, instead of
// reading the queue from its first task and skipping what comes before;
// the stranded tasks are read from the expired end of tasks_leased_idx.
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
					"default", int16(0), time.Now().Add(-time.Hour), int64(1000), StrayLookSize, []string{"tool:http_request"})
				if err != nil {
					t.Fatal(err)
				}
				reads, stranded := 0, 0
				plan.Walk(func(n *plancheck.Node, _ []*plancheck.Node) {
					if n.Relation != "tasks" {
						return
					}
					// The stranded: the expired leases' end of tasks_leased_idx.
					if n.Index == "tasks_leased_idx" && strings.Contains(n.IndexCond, "lease_expires_at < now()") {
						stranded++
						return
					}
					reads++
					if n.Index != "tasks_runnable_tenant_idx" || !strings.Contains(n.IndexCond, "ROW(tasks.tenant, tasks.priority, tasks.run_at, tasks.id) > ROW(") {
						t.Errorf("%s of tasks through %q (cond %q): not a read from the look's place\n%s", n.NodeType, n.Index, n.IndexCond, plan)
					}
				})
				if reads != 1 || stranded != 1 {
					t.Errorf("due tasks read %d times, stranded ones %d, want once each\n%s", reads, stranded, plan)
				}
			})
		}
	}
}

// The queues with due tasks, or running ones whose lease expired, that
// no live pool works are found, each with its counts and first ids;
// worked queues, and tasks not due or leased still, are not. One pool of
// the fleet looks a minute: another that asks meanwhile gets nothing.
func TestUnworkedQueues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := New(testdb.New(t))
	ids := map[string][]int64{}
	for _, p := range []EnqueueParams{
		{Queue: "default", Kind: "noop"},
		{Queue: "mail", Kind: "noop"}, {Queue: "mail", Kind: "noop"},
		{Queue: "mial", Kind: "noop"},
		{Queue: "later", Kind: "noop", RunAt: time.Now().Add(time.Hour)},
		{Queue: "billing", Kind: "noop"}, {Queue: "billing", Kind: "noop"},
	} {
		r, err := s.Enqueue(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		ids[p.Queue] = append(ids[p.Queue], r.Task.ID)
	}
	// billing's daemon died running one task; the other's lease holds.
	for i, lease := range []string{"-1 minute", "1 minute"} {
		if _, err := s.db.Exec(ctx, `UPDATE tasks SET state = 'running', lease_owner = 'gone', lease_expires_at = now() + $2::interval WHERE id = $1`,
			ids["billing"][i], lease); err != nil {
			t.Fatal(err)
		}
	}
	look := func(worked []string, limit int) []UnworkedQueue {
		t.Helper()
		if _, err := s.db.Exec(ctx, `DELETE FROM leaders WHERE name = 'queue-look'`); err != nil {
			t.Fatal(err)
		}
		got, err := s.UnworkedQueues(ctx, "pool-1", worked, limit)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	got := look([]string{"default"}, 100)
	want := fmt.Sprint([]UnworkedQueue{
		{Queue: "billing", IDs: []int64{}, Stranded: 1, StrandedIDs: ids["billing"][:1]},
		{Queue: "mail", Tasks: 2, IDs: ids["mail"], StrandedIDs: []int64{}},
		{Queue: "mial", Tasks: 1, IDs: ids["mial"], StrandedIDs: []int64{}},
	})
	if fmt.Sprint(got) != want {
		t.Fatalf("unworked queues %v, want %v", got, want)
	}
	if got := look([]string{"default", "mail", "mial", "billing"}, 100); len(got) != 0 {
		t.Fatalf("every queue worked: %v", got)
	}
	if got := look(nil, 1); len(got) != 4 || got[2].Tasks != 1 {
		t.Fatalf("none worked, a count up to 1: %v", got)
	}
	// pool-1 took the look's turn: pool-2 gets nothing this minute.
	if got, err := s.UnworkedQueues(ctx, "pool-2", nil, 100); err != nil || len(got) != 0 {
		t.Fatalf("a second pool in the same minute: %v, %v; want nothing", got, err)
	}
}

// The look at the queues reads tasks through tasks_runnable_tenant_idx
// and tasks_leased_idx only, in both plan modes and whatever the
// statistics: never the table, which holds every finished task.
func TestUnworkedQueuesReadTheClaimIndex(t *testing.T) {
	ctx := context.Background()
	for _, size := range trapSizes {
		conn, _, _ := plannerTrap(t, size.finished, size.running)
		if _, err := conn.Exec(ctx, `INSERT INTO tasks (kind, queue) SELECT 'noop', 'q' || (g % 3) FROM generate_series(1, 2000) g; ANALYZE tasks`); err != nil {
			t.Fatal(err)
		}
		for _, mode := range plancheck.Modes {
			t.Run(size.name+"/"+mode, func(t *testing.T) {
				plan, err := plancheck.Explain(ctx, conn, mode, unworkedQueuesSQL, []string{"q0"}, StrayLookSize, unworkedQueuesMax)
				if err != nil {
					t.Fatal(err)
				}
				if err := plancheck.Reads(plan, "tasks", "tasks_runnable_tenant_idx", "tasks_leased_idx"); err != nil {
					t.Error(err)
				}
			})
		}
	}
}
