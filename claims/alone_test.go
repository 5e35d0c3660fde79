package claims

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/agentledger/agentledger/internal/test/testdb"
)

// The alone claim takes the due tasks of the queue's only tenant with due
// tasks, and nothing when a second tenant has due tasks or the tenant is
// capped; a due-only Claim then claims in full, shared between tenants,
// and claims in full for a while before trying alone again.
func TestAloneClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	s := New(db)
	enqueue := func(tenant string, n int) {
		t.Helper()
		for range n {
			if _, err := s.Enqueue(ctx, EnqueueParams{Tenant: tenant, Queue: "q", Kind: "noop"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	alone := func(tenant string) int {
		t.Helper()
		got, err := s.claim(ctx, claimAloneSQL, ClaimParams{Queue: "q", Worker: "w", Limit: 4, Lease: time.Minute, Hint: &ClaimHint{tenant: tenant}})
		if err != nil {
			t.Fatal(err)
		}
		return len(got)
	}
	enqueue("a", 3)
	if n := alone("a"); n != 3 {
		t.Fatalf("one tenant: claimed %d, want 3", n)
	}
	enqueue("a", 2)
	enqueue("b", 2)
	if n := alone("a"); n != 0 {
		t.Fatalf("two tenants: claimed %d of a alone, want none", n)
	}
	if n := alone("b"); n != 0 {
		t.Fatalf("two tenants: claimed %d of b alone, want none", n)
	}
	// A due-only Claim that was told the queue is alone finds it is not,
	// and shares the batch between the two tenants.
	hint := &ClaimHint{n: 1}
	got, err := s.Claim(ctx, ClaimParams{Queue: "q", Worker: "w", Limit: 2, Lease: time.Minute, DueOnly: true, Hint: hint})
	if err != nil || len(got) != 2 || got[0].Tenant == got[1].Tenant {
		t.Fatalf("claim after a miss: %d tasks %v, want one of each tenant", len(got), err)
	}
	if hint.likely() {
		t.Fatal("after a miss the queue tries alone again at once")
	}
	// One tenant's tasks after an empty try: a task that committed between
	// the statements, a miss only the second time in a row.
	one := &ClaimHint{n: 1}
	one.after(got[:1])
	if !one.likely() {
		t.Fatal("one tenant's tasks after an empty try stopped the alone claims")
	}
	one.after(got[:1])
	if one.likely() {
		t.Fatal("twice in a row (a capped tenant) did not stop them")
	}
	// A capped tenant is never claimed alone (its cap is counted in full).
	enqueue("c", 1)
	if _, err := db.Exec(ctx, `DELETE FROM tasks WHERE tenant <> 'c' AND state = 'queued'`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `INSERT INTO tenant_shares (tenant, weight, max_running, source) VALUES ('c', 1, 5, 'operator')`); err != nil {
		t.Fatal(err)
	}
	if n := alone("c"); n != 0 {
		t.Fatalf("capped tenant: claimed %d alone, want none", n)
	}
}

// Alone claims read past the last task the loop's alone claims took: a
// task that sorts before the mark (one of a higher priority, enqueued
// since) waits until the mark is dropped — at Rewind, which the loop calls
// at its poll and when notified of new tasks — and is then the first
// taken. A short claim drops the mark too.
func TestAnAloneClaimReadsPastItsMark(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := New(testdb.New(t))
	enqueue := func(priority int16) int64 {
		t.Helper()
		r, err := s.Enqueue(ctx, EnqueueParams{Tenant: "a", Queue: "q", Kind: "noop", Priority: priority})
		if err != nil {
			t.Fatal(err)
		}
		return r.Task.ID
	}
	var ids []int64
	for range 10 {
		ids = append(ids, enqueue(50))
	}
	hint := &ClaimHint{}
	claim := func(want ...int64) {
		t.Helper()
		got, err := s.Claim(ctx, ClaimParams{Queue: "q", Worker: "w", Limit: 3, Lease: time.Minute, DueOnly: true, Hint: hint})
		if err != nil {
			t.Fatal(err)
		}
		var gotIDs []int64
		for _, task := range got {
			gotIDs = append(gotIDs, task.ID)
		}
		if !slices.Equal(gotIDs, want) {
			t.Fatalf("claimed %v, want %v", gotIDs, want)
		}
	}
	claim(ids[0], ids[1], ids[2]) // in full: the tenant is found alone
	if !hint.likely() {
		t.Fatal("one tenant's tasks did not make the next claim try alone")
	}
	claim(ids[3], ids[4], ids[5]) // alone, from the tenant's first task
	urgent := enqueue(10)
	claim(ids[6], ids[7], ids[8]) // past the mark: the urgent task waits
	hint.Rewind()
	claim(urgent, ids[9]) // from the first task again; short
	if _, ok := hint.markOf(); ok {
		t.Fatal("a short claim kept its mark")
	}

	// Past a mark only rows untouched since written are taken: a task
	// locked by a transaction that ended (its xmax is set) waits for a
	// claim from the first task.
	for range 6 {
		ids = append(ids, enqueue(50))
	}
	claim(ids[10], ids[11], ids[12]) // alone, from the first task (the short claim dropped the mark)
	claim(ids[13], ids[14], ids[15]) // alone; the mark is ids[15]
	for range 4 {
		ids = append(ids, enqueue(50))
	}
	if _, err := s.db.Exec(ctx, `SELECT FROM tasks WHERE id = $1 FOR UPDATE`, ids[16]); err != nil {
		t.Fatal(err)
	}
	claim(ids[17], ids[18], ids[19]) // past the mark, the locked task passed over
	hint.Rewind()
	claim(ids[16]) // from the first task
}

// markOf is the mark, if the hint has one.
func (h *ClaimHint) markOf() (markKey, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.mark, h.hasMark
}
