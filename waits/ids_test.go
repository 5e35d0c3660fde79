package waits_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentledger/agentledger/waits"
)

// An attempt reaching a step whose wait is recorded finds it and takes no
// id: the next wait's id follows the first's (waits went 1, 3, 5).
func TestAwaitingAgainTakesNoID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pool(t, 2)
	s := waits.NewStore(db)
	task := newTask(t, db)
	until := time.Now().Add(time.Hour)
	timer := waits.Wait{TaskID: task.ID, Generation: task.Generation, Step: "tool/0", Tenant: task.Tenant, Kind: waits.KindTimer}
	first, err := s.Await(ctx, timer, &until, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		again, err := s.Await(ctx, timer, &until, time.Hour)
		if err != nil || again.ID != first.ID {
			t.Fatalf("awaited again: %+v: %v, want wait %d found", again, err, first.ID)
		}
	}
	other := newTask(t, db)
	next, err := s.Await(ctx, waits.Wait{TaskID: other.ID, Generation: other.Generation, Step: "tool/0", Tenant: other.Tenant,
		Kind: waits.KindTimer}, &until, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if next.ID != first.ID+1 {
		t.Fatalf("the next wait is %d, want %d: awaiting again took ids", next.ID, first.ID+1)
	}
}
