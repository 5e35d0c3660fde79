package migrations_test

import (
	"context"
	"testing"

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
	n := 0
	for rows.Next() {
		var name string
		var size int
		if err := rows.Scan(&name, &size); err != nil {
			t.Fatal(err)
		}
		n++
		if size > maxWhenText {
			t.Errorf("%s's WHEN clause is %d bytes of node text, over %d: move what it tests into its function", name, size, maxWhenText)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 2 {
		t.Fatalf("%d triggers with a WHEN clause on tasks, want tasks_record_success and tasks_wake_parent", n)
	}
}

// A succeeded row's success is recorded when the row stops holding it, and
// only then; a child wakes its waiting parent when it reaches an end, and
// only then (the tests 00039 moved from the WHEN clauses into the
// functions).
func TestTaskTriggersFireOnlyWhenTheyDid(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	var parent, child int64
	if err := pool.QueryRow(ctx, `INSERT INTO tasks (kind, state) VALUES ('p', 'waiting') RETURNING id`).Scan(&parent); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(ctx, `INSERT INTO tasks (kind, state, parent_id, parent_generation,
		lease_token, attempt, lease_owner, attempted_at, finished_at)
		VALUES ('c', 'succeeded', $1, 1, 7, 1, 'w', now(), now()) RETURNING id`, parent).Scan(&child); err != nil {
		t.Fatal(err)
	}
	count := func(what, query string, args ...any) int {
		t.Helper()
		var n int
		if err := pool.QueryRow(ctx, query, args...).Scan(&n); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return n
	}
	records := func() int {
		return count("records", `SELECT count(*) FROM task_attempts WHERE task_id = $1`, child)
	}
	parentQueued := func() bool {
		return count("parent", `SELECT count(*) FROM tasks WHERE id = $1 AND state = 'queued'`, parent) == 1
	}
	exec := func(q string) {
		t.Helper()
		if _, err := pool.Exec(ctx, q, child); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}

	// Nothing of the success changes, and the state is set to what it was.
	exec(`UPDATE tasks SET updated_at = now() + interval '1 second', payload = '{"x":1}' WHERE id = $1`)
	exec(`UPDATE tasks SET state = 'succeeded' WHERE id = $1`)
	if n := records(); n != 0 {
		t.Fatalf("%d records after updates that left the success as it was, want 0", n)
	}
	if parentQueued() {
		t.Fatal("the parent woke for a child whose state did not change")
	}

	// The success's time changes: the row no longer holds it as it was.
	exec(`UPDATE tasks SET finished_at = finished_at + interval '1 second' WHERE id = $1`)
	if n := records(); n != 1 {
		t.Fatalf("%d records after the success's end time changed, want 1", n)
	}

	// A replay: the row leaves succeeded (its record is already written,
	// under the same token) and comes back to it, which wakes the parent.
	exec(`UPDATE tasks SET state = 'queued', finished_at = NULL WHERE id = $1`)
	if n := records(); n != 1 {
		t.Fatalf("%d records after a replay of a recorded token, want 1", n)
	}
	if parentQueued() {
		t.Fatal("the parent woke for a child that went back to queued")
	}
	exec(`UPDATE tasks SET state = 'succeeded', lease_token = 8, finished_at = now() WHERE id = $1`)
	if !parentQueued() {
		t.Fatal("the parent did not wake when its child succeeded")
	}
	exec(`UPDATE tasks SET state = 'queued', finished_at = NULL WHERE id = $1`)
	if n := records(); n != 2 {
		t.Fatalf("%d records after the second success was replayed, want 2", n)
	}
}
