package main

import (
	"context"
	"testing"
	"time"

	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

// The long day counts each finished task once: a frontier read behind the
// last is not followed, a window read over again counts nothing twice,
// and a task whose finish is stamped again is told apart from one read
// again.
func TestFinishesCountEachTaskOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := claims.New(pool)
	var ids []int64
	for i := range 3 {
		res, err := s.Enqueue(ctx, claims.EnqueueParams{Kind: "steps", Payload: []byte(`{"steps":[]}`),
			SubmissionKey: "ld-steps-" + string(rune('0'+i))})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.Task.ID)
	}
	finish := func(id int64, at time.Time) {
		t.Helper()
		if _, err := pool.Exec(ctx, `UPDATE tasks SET state = 'succeeded', finished_at = $2 WHERE id = $1`, id, at); err != nil {
			t.Fatal(err)
		}
	}
	for i, id := range ids {
		finish(id, t0.Add(time.Duration(i+1)*time.Second))
	}
	f := newFinishes(pool, t0)
	read := func(to time.Duration, want int) {
		t.Helper()
		all, by, err := f.upTo(ctx, t0.Add(to))
		if err != nil {
			t.Fatal(err)
		}
		if all.Finished != want || by["steps"].Finished != want {
			t.Fatalf("up to %s: %d finished (%d steps), want %d", to, all.Finished, by["steps"].Finished, want)
		}
	}
	read(2500*time.Millisecond, 2)
	read(1500*time.Millisecond, 0) // behind: not followed
	if f.Behind != 1 {
		t.Errorf("Behind %d, want 1", f.Behind)
	}
	f.from = t0 // as if the windows overlapped
	read(4*time.Second, 1)
	if f.Reread != 2 {
		t.Errorf("Reread %d, want 2", f.Reread)
	}
	finish(ids[0], t0.Add(5*time.Second))
	read(6*time.Second, 0)
	if f.Refinished != 1 || f.Reread != 2 {
		t.Errorf("Refinished %d, Reread %d; want 1 and 2", f.Refinished, f.Reread)
	}
}
