package waits_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/agentledger/agentledger/internal/test/keyset"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/waits"
)

// A wait still open whose task ended (dead after the wait woke it, before
// its wait tool ran again) is not listed or counted as waiting; it is
// left open, for a retry of the task takes it up again. An open wait of a
// task that did not end is listed.
func TestAWaitOfAnEndedTaskIsNotListed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	s := waits.NewStore(db)
	ended, going := newTask(t, db), newTask(t, db)
	park(t, db, ended.ID)
	park(t, db, going.ID)
	await(t, s, signalWait(ended, "tool/1", "paid", "a"))
	await(t, s, signalWait(going, "tool/1", "paid", "b"))
	if _, err := db.Exec(ctx, `UPDATE tasks SET state = 'dead', finished_at = now() WHERE id = $1`, ended.ID); err != nil {
		t.Fatal(err)
	}
	ws, err := s.List(ctx, waits.ListParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 1 || ws[0].TaskID != going.ID {
		t.Fatalf("listed %+v, want only task %d's wait", ws, going.ID)
	}
	backlog, _, err := s.Backlog(ctx)
	if err != nil || backlog[waits.KindSignal] != 1 {
		t.Fatalf("backlog %v, %v; want 1 signal wait", backlog, err)
	}
	var open int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM waits WHERE state = 'waiting'`).Scan(&open); err != nil || open != 2 {
		t.Fatalf("%d open waits, %v; want both left open", open, err)
	}
}

// The waiting waits read page by page after each page's last are the
// whole list in its order, each once, deadlines that tie included (then
// the newest first); a page of the ended ones cannot follow a position.
func TestWaitingWaitsPageAfterAPosition(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	s := waits.NewStore(db)
	var ids []int64
	for i := range 8 {
		task := newTask(t, db)
		park(t, db, task.ID)
		ids = append(ids, await(t, s, signalWait(task, "tool/1", "paid", fmt.Sprint(i))).ID)
	}
	// Three deadlines, two of them shared by three waits each, and the
	// creation times apart.
	if _, err := db.Exec(ctx, `UPDATE waits w SET deadline = timestamptz '2030-01-01' + (n % 3) * interval '1 minute',
		created_at = timestamptz '2026-01-01' + n * interval '1 second'
		FROM (SELECT id, row_number() OVER (ORDER BY id) AS n FROM waits WHERE id = ANY ($1)) o WHERE w.id = o.id`, ids); err != nil {
		t.Fatal(err)
	}
	whole, err := s.List(ctx, waits.ListParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(whole) != len(ids) {
		t.Fatalf("listed %d waits, want %d", len(whole), len(ids))
	}
	paged := keyset.All(t, len(ids), func(after *waits.Position) ([]waits.Wait, error) {
		return s.List(ctx, waits.ListParams{Limit: 3, After: after})
	}, waits.Wait.Position)
	keyset.Same(t, "waits", paged, whole, func(w waits.Wait) int64 { return w.ID })
	last := paged[len(paged)-1].Position()
	_, err = s.List(ctx, waits.ListParams{States: []string{waits.Waiting, "ended"}, After: &last})
	invalid(t, "a page of ended waits after a position", err, "after")
}
