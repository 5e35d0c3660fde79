package migrations_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentledger/agentledger/internal/test/testdb"
)

// maxWhenText bounds the stored node text of a WHEN clause of a trigger on
// tasks. PostgreSQL reads it back and compiles it for every statement that
// updates the table, a cost that grows with its length (00039).
const maxWhenText = 1024

// The row triggers on tasks keep in their WHEN clauses only the test that
// passes over rows that never fire; the rest is in their functions.
func TestTaskTriggersTestLittleInTheirWhenClauses(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	rows, err := pool.Query(context.Background(), `
		SELECT tgname, length(tgqual) FROM pg_trigger
		WHERE tgrelid = 'tasks'::regclass AND NOT tgisinternal AND tgqual IS NOT NULL`)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for rows.Next() {
		var name string
		var size int
		if err := rows.Scan(&name, &size); err != nil {
			t.Fatal(err)
		}
		seen[name] = true
		if size > maxWhenText {
			t.Errorf("%s's WHEN clause is %d bytes of node text, over %d: move what it tests into its function", name, size, maxWhenText)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"tasks_record_success", "tasks_wake_parent"} {
		if !seen[name] {
			t.Errorf("no trigger %s with a WHEN clause on tasks", name)
		}
	}
}

// succeededChild inserts a succeeded task under parent (a waiting task of
// generation 1, made if parent is 0) and returns both ids.
func succeededChild(t *testing.T, pool *pgxpool.Pool, parent int64) (child, par int64) {
	t.Helper()
	ctx := context.Background()
	if parent == 0 {
		if err := pool.QueryRow(ctx, `INSERT INTO tasks (kind, state) VALUES ('p', 'waiting') RETURNING id`).Scan(&parent); err != nil {
			t.Fatal(err)
		}
	}
	if err := pool.QueryRow(ctx, `INSERT INTO tasks (kind, state, parent_id, parent_generation,
		lease_token, attempt, lease_owner, attempted_at, finished_at)
		VALUES ('c', 'succeeded', $1, 1, 7, 1, 'w', now(), now()) RETURNING id`, parent).Scan(&child); err != nil {
		t.Fatal(err)
	}
	return child, parent
}

// A succeeded row's success is recorded when any part of it changes, and
// only then; a statement that sets none of its columns does not even call
// the trigger's function (the tests 00039 moved from the WHEN clause into
// the function, and the columns it named).
func TestTheSuccessIsRecordedWhenItsRowMovesOn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	for _, c := range []struct {
		set     string
		records int
		calls   int // calls of agentledger_record_success; -1: either
	}{
		{"updated_at = now() + interval '1 second', payload = '{\"x\":1}'", 0, 0},
		{"ledger_expired_at = now()", 0, 0},
		{"state = 'succeeded', lease_owner = 'w'", 0, -1}, // set, unchanged: called or not
		{"state = 'queued', finished_at = NULL", 1, 1},
		{"lease_token = 8", 1, 1},
		{"generation = 2", 1, 1},
		{"attempt = 2", 1, 1},
		{"lease_owner = 'v'", 1, 1},
		{"lease_owner = NULL", 1, 1},
		{"attempted_at = attempted_at + interval '1 second'", 1, 1},
		{"attempted_at = NULL", 1, 1},
		{"finished_at = finished_at + interval '1 second'", 1, 1},
	} {
		child, _ := succeededChild(t, pool, 0)
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, `SET LOCAL track_functions = 'pl'`); err != nil {
			t.Fatal(err)
		}
		// The backend's counts not yet reported carry over from its
		// earlier transactions: the update's calls are the difference.
		called := func() int {
			var n int
			if err := tx.QueryRow(ctx, `SELECT coalesce(sum(calls), 0) FROM pg_stat_xact_user_functions
				WHERE funcname = 'agentledger_record_success'`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		before := called()
		if _, err := tx.Exec(ctx, `UPDATE tasks SET `+c.set+` WHERE id = $1`, child); err != nil {
			t.Fatalf("SET %s: %v", c.set, err)
		}
		calls := called() - before
		var records int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM task_attempts WHERE task_id = $1 AND lease_token = 7
			AND outcome = 'succeeded'`, child).Scan(&records); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if records != c.records || (c.calls >= 0 && calls != c.calls) {
			t.Errorf("SET %s on a succeeded row: %d records, %d calls of the function; want %d and %d",
				c.set, records, calls, c.records, c.calls)
		}
	}
}

// A child wakes its waiting parent when it reaches an end, and only then:
// not when it is set to the state it is in, not when it leaves an end, and
// not when it belongs to another generation of the parent.
func TestAChildWakesItsParentAtItsEnd(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	running := `state = 'running', lease_expires_at = now() + interval '1 hour', finished_at = NULL`
	for _, c := range []struct {
		before, set string
		wakes       bool
	}{
		{running, "state = 'succeeded', lease_expires_at = NULL, finished_at = now()", true},
		{running, "state = 'dead', lease_expires_at = NULL, finished_at = now()", true},
		{running, "state = 'cancelled', lease_expires_at = NULL, finished_at = now()", true},
		{"state = 'compensating'", "state = 'compensated'", true},
		{running, "state = 'retrying', lease_expires_at = NULL", false},
		{"", "state = 'succeeded'", false},                      // set to the end it is at
		{"", "state = 'queued', finished_at = NULL", false},     // leaves its end
		{"parent_generation = 2", "state = 'cancelled'", false}, // another generation's child
	} {
		child, parent := succeededChild(t, pool, 0)
		if c.before != "" {
			if _, err := pool.Exec(ctx, `UPDATE tasks SET `+c.before+` WHERE id = $1`, child); err != nil {
				t.Fatalf("SET %s: %v", c.before, err)
			}
			// Getting there may have woken the parent: make it wait again.
			if _, err := pool.Exec(ctx, `UPDATE tasks SET state = 'waiting' WHERE id = $1`, parent); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := pool.Exec(ctx, `UPDATE tasks SET `+c.set+` WHERE id = $1`, child); err != nil {
			t.Fatalf("SET %s: %v", c.set, err)
		}
		var state string
		if err := pool.QueryRow(ctx, `SELECT state FROM tasks WHERE id = $1`, parent).Scan(&state); err != nil {
			t.Fatal(err)
		}
		if woke := state == "queued"; woke != c.wakes {
			t.Errorf("a child set from (%s) to (%s): its parent is %s, woken %v; want woken %v",
				c.before, c.set, state, woke, c.wakes)
		}
	}
}
