package waits_test

import (
	"context"
	"testing"

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
