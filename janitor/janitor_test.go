package janitor_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/claims"
	"github.com/agentledger/agentledger/internal/test/testdb"
	"github.com/agentledger/agentledger/janitor"
	"github.com/agentledger/agentledger/ledger"
	"github.com/agentledger/agentledger/notify/outbox"
	"github.com/agentledger/agentledger/operator"
	"github.com/agentledger/agentledger/tools"
	"github.com/agentledger/agentledger/webhooks"
)

const day = 24 * time.Hour

// sweeps are agentd's: ledger 7 days, tasks 30, outbox 7.
func sweeps(db claims.DB) []janitor.Sweep {
	l, c, o := ledger.New(db), claims.New(db), outbox.NewStore(db)
	return []janitor.Sweep{
		{Name: "ledger", Window: 7 * day, Delete: func(ctx context.Context, w time.Duration, n int) (int64, error) {
			return l.Expire(ctx, claims.LedgerRetention{}, ledger.Retention{Default: w}, n)
		}},
		{Name: "outbox", Window: 7 * day, Delete: o.DeleteSettled},
		{Name: "tasks", Window: 30 * day, Delete: c.DeleteFinished},
		{Name: "inbox", Window: 7 * day, Delete: webhooks.ExpireInbox(db)},
	}
}

// The janitor deletes only what is expired and finished: an unfinished
// task's ledger survives whatever its age, and so do recent finished tasks.
func TestDeletesOnlyExpiredFinished(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	// Four tasks, each with one ledger row: finished 40 days ago, finished
	// 10 days ago, finished yesterday, and still running (claimed 40 days
	// ago by the clock of its rows).
	ids := tasksWithEffects(t, db, 4, 3)
	ages := []time.Duration{40 * day, 10 * day, day, 40 * day}
	for i, id := range ids {
		age := ages[i].String()
		if _, err := db.Exec(ctx, `UPDATE tasks SET finished_at = CASE WHEN state = 'succeeded' THEN now() - $2::interval END,
			created_at = now() - $2::interval WHERE id = $1`, id, age); err != nil {
			t.Fatal(err)
		}
		for _, stmt := range []string{`UPDATE ledger SET updated_at = now() - $2::interval WHERE task_id = $1`,
			`UPDATE outbox SET state = 'delivered', updated_at = now() - $2::interval WHERE task_id = $1`} {
			if _, err := db.Exec(ctx, stmt, id, age); err != nil {
				t.Fatal(err)
			}
		}
	}

	if _, err := db.Exec(ctx, `INSERT INTO inbox (source, delivery_id, received_at) VALUES
		('gh', 'old', now() - interval '8 days'), ('gh', 'new', now() - interval '2 days')`); err != nil {
		t.Fatal(err)
	}

	j, err := janitor.New(db, sweeps(db), janitor.Config{Batch: 1})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := j.RunOnce(ctx)
	if err != nil || rep.Skipped {
		t.Fatalf("run: %+v %v", rep, err)
	}
	// Ledger: the 40- and 10-day-old finished tasks' rows; outbox: their
	// events; tasks: only the 40-day-old one.
	if rep.Deleted["ledger"] != 2 || rep.Deleted["outbox"] != 2 || rep.Deleted["tasks"] != 1 || rep.Deleted["inbox"] != 1 {
		t.Fatalf("deleted %v, want ledger 2, outbox 2, tasks 1, inbox 1 (the 8-day-old delivery)", rep.Deleted)
	}
	exists := func(table string, id int64) bool {
		col := "task_id"
		if table == "tasks" {
			col = "id"
		}
		var ok bool
		if err := db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+table+` WHERE `+col+` = $1)`, id).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	for i, want := range []struct{ task, ledger bool }{{false, false}, {true, false}, {true, true}, {true, true}} {
		if got := exists("tasks", ids[i]); got != want.task {
			t.Errorf("task %d (%v old) exists = %v, want %v", i, ages[i], got, want.task)
		}
		if got := exists("ledger", ids[i]); got != want.ledger {
			t.Errorf("ledger of task %d (%v old) exists = %v, want %v", i, ages[i], got, want.ledger)
		}
	}
	// The 10-day-old task lost its ledger: it can no longer be replayed.
	if _, err := operator.New(db).Replay(ctx, "", ids[1]); err == nil {
		t.Error("a task whose ledger expired was replayed")
	}
	// A second run finds nothing.
	if rep, err := j.RunOnce(ctx); err != nil || rep.Deleted["ledger"]+rep.Deleted["outbox"]+rep.Deleted["tasks"]+rep.Deleted["inbox"] != 0 {
		t.Fatalf("second run: %+v %v", rep, err)
	}
}

// A finished task whose notification is still to deliver, or failed and
// so to be redelivered, keeps its row and its ledger rows whatever their
// age while the event changed within the sweep's window: its delivery
// reads the channel for a post of unknown outcome through the post's
// ledger row, and without it would post again. An event untouched for a
// window holds nothing (no dispatcher runs it), and once the events are
// settled and old, the tasks and rows go.
func TestUnsettledNotificationsKeepTheirTask(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	ids := tasksWithEffects(t, db, 3, 3)
	age := (40 * day).String()
	for _, stmt := range []string{
		`UPDATE tasks SET finished_at = now() - $1::interval`,
		`UPDATE ledger SET updated_at = now() - $1::interval`,
		`UPDATE outbox SET updated_at = now() - $1::interval, lease_expires_at = NULL, available_at = now() + interval '1 hour'`,
	} {
		if _, err := db.Exec(ctx, stmt, age); err != nil {
			t.Fatal(err)
		}
	}
	// Task 0's event was retried an hour ago; task 1's failed yesterday
	// (the outbox keeps it for a week, for a redelivery); task 2's has not
	// been touched for 40 days.
	if _, err := db.Exec(ctx, `UPDATE outbox SET updated_at = now() - interval '1 hour' WHERE task_id = $1`, ids[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `UPDATE outbox SET state = 'failed', last_error = 'gave up', updated_at = now() - interval '1 day'
		WHERE task_id = $1`, ids[1]); err != nil {
		t.Fatal(err)
	}
	count := func(table, col string, ids ...int64) (n int) {
		if err := db.QueryRow(ctx, `SELECT count(*) FROM `+table+` WHERE `+col+` = ANY ($1)`, ids).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	j, err := janitor.New(db, sweeps(db), janitor.Config{Batch: 10})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if tasks, rows := count("tasks", "id", ids[:2]...), count("ledger", "task_id", ids[:2]...); tasks != 2 || rows != 2 {
		t.Fatalf("with one event pending and one failed lately (tasks 40 days old): %d tasks and %d ledger rows left, want both kept", tasks, rows)
	}
	if tasks, rows := count("tasks", "id", ids[2]), count("ledger", "task_id", ids[2]); tasks+rows != 0 {
		t.Fatalf("with its event untouched for 40 days: %d tasks and %d ledger rows left, want none: nothing is held for ever", tasks, rows)
	}
	// The pending event is delivered, and both settled long ago. The
	// failed one's task goes with it, leaving its ledger rows orphans,
	// which the next run deletes.
	if _, err := db.Exec(ctx, `UPDATE outbox SET state = 'delivered' WHERE task_id = $1`, ids[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `UPDATE outbox SET updated_at = now() - $1::interval`, age); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := j.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if tasks, rows, events := count("tasks", "id", ids[:2]...), count("ledger", "task_id", ids[:2]...), count("outbox", "task_id", ids[:2]...); tasks+rows+events != 0 {
		t.Fatalf("settled and old: %d tasks, %d ledger rows and %d events left, want none", tasks, rows, events)
	}
}

// tasksWithEffects makes n tasks under a rule that notifies of every
// event, each with one keyed effect in its ledger, and finishes the first
// finished of them (succeeded, an event each); it returns their ids.
func tasksWithEffects(t *testing.T, db claims.DB, n, finished int) []int64 {
	t.Helper()
	ctx := context.Background()
	store, l := claims.New(db), ledger.New(db)
	if _, err := outbox.NewRules(db).Put(ctx, outbox.Rule{Name: "ops", Channel: "ops", Events: outbox.Events}, false); err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for i := range n {
		if _, err := store.Enqueue(ctx, claims.EnqueueParams{Kind: "steps", SubmissionKey: string(rune('a' + i))}); err != nil {
			t.Fatal(err)
		}
		got, err := store.Claim(ctx, claims.ClaimParams{Queue: claims.DefaultQueue, Worker: "w", Limit: 1, Lease: time.Hour})
		if err != nil || len(got) != 1 {
			t.Fatal(got, err)
		}
		task := got[0]
		ids = append(ids, task.ID)
		_, err = l.Do(ctx, tools.AttemptOf(task), ledger.Effect{Operation: "op", StepPath: "tool/0", Class: ledger.Keyed,
			Request: json.RawMessage(`{}`), Perform: func(context.Context, ledger.Call) (ledger.Result, error) { return ledger.Result{}, nil }})
		if err != nil {
			t.Fatal(err)
		}
		if i < finished {
			if err := store.Succeed(ctx, agentledger.Lease{TaskID: task.ID, Token: task.LeaseToken}, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	return ids
}

// While one janitor runs, another skips its run.
func TestOneJanitorAtATime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	held := make(chan struct{})
	release := make(chan struct{})
	slow := janitor.Sweep{Name: "slow", Window: time.Hour, Delete: func(context.Context, time.Duration, int) (int64, error) {
		close(held)
		<-release
		return 0, nil
	}}
	a, err := janitor.New(db, []janitor.Sweep{slow}, janitor.Config{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := janitor.New(db, sweeps(db), janitor.Config{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() {
		_, err := a.RunOnce(ctx)
		done <- err
	}()
	<-held
	if rep, err := b.RunOnce(ctx); err != nil || !rep.Skipped {
		t.Fatalf("while a runs: %+v %v, want skipped", rep, err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if rep, err := b.RunOnce(ctx); err != nil || rep.Skipped {
		t.Fatalf("after a: %+v %v, want a run", rep, err)
	}
}

func TestBadSweep(t *testing.T) {
	t.Parallel()
	if _, err := janitor.New(nil, []janitor.Sweep{{Name: "x"}}, janitor.Config{}); err == nil {
		t.Fatal("a sweep without a delete was accepted")
	}
}

// Rows keep coming of age while a sweep runs, a batch at every call, as the
// ledger's do at 1,000 tasks/s: the sweep deletes what was of age when it
// began, comes back short, and the sweep after it runs in the same run.
func TestASweepDoesNotChaseNewRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	const window = time.Millisecond
	var arrived []time.Time // when each row came in; it is of age window later
	for range 2500 {
		arrived = append(arrived, time.Now().Add(-time.Hour))
	}
	calls := 0
	busy := janitor.Sweep{Name: "busy", Window: window, Delete: func(_ context.Context, w time.Duration, batch int) (int64, error) {
		if calls++; calls > 50 {
			return 0, errors.New("50 full batches: the sweep is chasing rows that came of age after it began")
		}
		cutoff := time.Now().Add(-w)
		var n int64
		kept := arrived[:0]
		for _, at := range arrived {
			if at.Before(cutoff) && n < int64(batch) {
				n++
				continue
			}
			kept = append(kept, at)
		}
		arrived = kept
		time.Sleep(2 * window) // a statement takes longer than rows take to come of age
		for range batch {
			arrived = append(arrived, time.Now().Add(-window))
		}
		return n, nil
	}}
	var after atomic.Bool
	next := janitor.Sweep{Name: "next", Window: time.Hour, Delete: func(context.Context, time.Duration, int) (int64, error) {
		after.Store(true)
		return 0, nil
	}}
	j, err := janitor.New(db, []janitor.Sweep{busy, next}, janitor.Config{Batch: 1000})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := j.RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Deleted["busy"] < 2500 || !after.Load() {
		t.Fatalf("deleted %v; the next sweep ran: %v; want the 2,500 rows of age at the start, then the next sweep", rep.Deleted, after.Load())
	}
}

// A sweep paces itself: after each full batch it pauses (1-Pace)/Pace
// times as long as the batch took (as long, at the default 0.5), so a
// backlog of expired rows does not hold the server's write path back to
// back; a short batch ends the sweep without a pause, and Pace 1 never
// pauses. The clock is the test's: each batch "takes" 80 ms.
func TestASweepPacesItself(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	for _, tc := range []struct {
		pace float64
		want []time.Duration
	}{
		{0, []time.Duration{80 * time.Millisecond, 80 * time.Millisecond}}, // the default, 0.5
		{0.8, []time.Duration{20 * time.Millisecond, 20 * time.Millisecond}},
		{1, nil},
	} {
		var clock time.Time
		left := 2500 // rows of age: batches of 1,000, 1,000, then 500
		sw := janitor.Sweep{Name: "rows", Window: time.Hour, Delete: func(_ context.Context, _ time.Duration, batch int) (int64, error) {
			clock = clock.Add(80 * time.Millisecond)
			n := min(left, batch)
			left -= n
			return int64(n), nil
		}}
		j, err := janitor.New(db, []janitor.Sweep{sw}, janitor.Config{Batch: 1000, Pace: tc.pace})
		if err != nil {
			t.Fatal(err)
		}
		var paused []time.Duration
		j.SetClock(func() time.Time { return clock }, func(_ context.Context, d time.Duration) bool {
			paused = append(paused, d)
			clock = clock.Add(d)
			return true
		})
		rep, err := j.RunOnce(context.Background())
		if err != nil || rep.Deleted["rows"] != 2500 {
			t.Fatalf("pace %v: deleted %v, %v; want 2,500", tc.pace, rep.Deleted, err)
		}
		if !slices.Equal(paused, tc.want) {
			t.Errorf("pace %v: paused %v, want %v", tc.pace, paused, tc.want)
		}
	}
	for _, bad := range []float64{-0.5, 1.5} {
		if _, err := janitor.New(db, nil, janitor.Config{Pace: bad}); err == nil || !strings.Contains(err.Error(), "Pace") {
			t.Errorf("Pace %v: %v, want a refusal that names it", bad, err)
		}
	}
}
