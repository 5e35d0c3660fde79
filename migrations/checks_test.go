package migrations_test

import (
	"context"
	"errors"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentledger/agentledger/internal/test/testdb"
)

// hotChecks are the tables written on every task, attempt, effect and
// notification, and the one CHECK constraint each carries (00028).
var hotChecks = map[string]string{
	"tasks":         "tasks_check",
	"task_attempts": "task_attempts_check",
	"ledger":        "ledger_check",
	"outbox":        "outbox_check",
}

// PostgreSQL rebuilds every CHECK expression of a table for each statement
// that writes it, folding any constant expression anew: a hot table carries
// one constraint, with no ARRAY[...] (an IN list) or other constant left to
// fold.
func TestHotTablesCarryOneFoldFreeCheck(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	rows, err := pool.Query(context.Background(), `
		SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid)
		FROM pg_constraint
		WHERE contype = 'c' AND conrelid::regclass::text = ANY ($1)`, slices.Collect(maps.Keys(hotChecks)))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string][]string{}
	for rows.Next() {
		var table, name, def string
		if err := rows.Scan(&table, &name, &def); err != nil {
			t.Fatal(err)
		}
		seen[table] = append(seen[table], name)
		if strings.Contains(def, "ARRAY[") {
			t.Errorf("%s.%s builds an array on every write: %s", table, name, def)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for table, want := range hotChecks {
		if got := seen[table]; len(got) != 1 || got[0] != want {
			t.Errorf("%s's CHECK constraints are %v, want [%s] alone", table, got, want)
		}
	}
}

// The merged constraints keep every rule of the ones they replaced: each
// write below breaks one rule of a valid row and is refused by the table's
// one constraint, and the valid rows themselves are accepted.
func TestOneCheckKeepsEveryRule(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	var task int64
	if err := pool.QueryRow(ctx, `INSERT INTO tasks (kind) VALUES ('noop') RETURNING id`).Scan(&task); err != nil {
		t.Fatal(err)
	}
	setup := []string{
		`INSERT INTO task_attempts (task_id, lease_token, attempt, generation, worker, started_at, outcome)
			VALUES ($1, 1, 1, 0, 'w', now(), 'succeeded')`,
		`INSERT INTO ledger (tenant, operation, effect_key, request_hash, class, task_id, generation, step_path, owner_token)
			VALUES ('default', 'op', 'k', '\x00', 'keyed', $1, 0, 's', 1)`,
		`INSERT INTO outbox (tenant, task_id, generation, attempt, event, channel, payload, step_path)
			VALUES ('default', $1, 0, 1, 'message', '#c', '{}', 's')`,
	}
	for _, s := range setup {
		if _, err := pool.Exec(ctx, s, task); err != nil {
			t.Fatalf("a valid row is refused: %v\n%s", err, s)
		}
	}
	long := func(n int) string { return "'" + strings.Repeat("x", n) + "'" }
	for _, c := range []struct{ table, set string }{
		{"tasks", "state = 'finished'"},
		{"tasks", "state = 'running'"},                           // without a lease
		{"tasks", "state = 'running', lease_expires_at = now()"}, // without an owner
		{"tasks", "lease_expires_at = now()"},                    // a lease on a queued task
		{"tasks", "tenant = ''"},
		{"tasks", "queue = ''"},
		{"tasks", "kind = ''"},
		{"tasks", "tenant = " + long(129)},
		{"tasks", "queue = " + long(129)},
		{"tasks", "kind = " + long(129)},
		{"tasks", "max_attempts = 0"},
		{"tasks", "attempt = -1"},
		{"tasks", "submission_key = '', request_hash = '\\x00'"},
		{"tasks", "submission_key = " + long(256) + ", request_hash = '\\x00'"},
		{"tasks", "submission_key = 'k'"}, // without a request hash
		{"task_attempts", "outcome = 'finished'"},
		{"ledger", "class = 'risky'"},
		{"ledger", "state = 'done'"},
		{"outbox", "state = 'sent'"},
		{"outbox", "state = 'delivered', lease_expires_at = now()"},
		{"outbox", "rule = 'r'"},       // a message with a rule
		{"outbox", "step_path = NULL"}, // a message without its step
	} {
		_, err := pool.Exec(ctx, `UPDATE `+c.table+` SET `+c.set)
		want := hotChecks[c.table]
		if names := regexp.MustCompile(`^(tenant|queue|kind|submission_key) `); c.table == "tasks" && names.MatchString(c.set) {
			want = "tasks_names" // 00044: the names' rules are a trigger's
		}
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "23514" || pgErr.ConstraintName != want {
			t.Errorf("UPDATE %s SET %s: %v, want a violation of %s", c.table, c.set, err, want)
		}
	}
	// An insert is held to the names' rules as an update is.
	for _, values := range []string{"('', 'default', 'noop', NULL, NULL)", "('t', " + long(129) + ", 'noop', NULL, NULL)",
		"('t', 'default', '', NULL, NULL)", "('t', 'default', 'noop', 'k', NULL)", "('t', 'default', 'noop', " + long(256) + ", '\\x00')"} {
		_, err := pool.Exec(ctx, `INSERT INTO tasks (tenant, queue, kind, submission_key, request_hash) VALUES `+values)
		if !isViolation(err, "tasks_names") {
			t.Errorf("INSERT INTO tasks … VALUES %s: %v, want a violation of tasks_names", values, err)
		}
	}
	// A write as a replica (a bulk fix, a logical replication apply) is
	// held to the names' rules too (00045), as it was to the CHECK.
	if _, err := pool.Exec(ctx, `BEGIN; SET LOCAL session_replication_role = replica;
		INSERT INTO tasks (tenant, kind) VALUES ('', 'noop'); COMMIT`); !isViolation(err, "tasks_names") {
		t.Errorf("an insert as a replica: %v, want a violation of tasks_names", err)
	}
	// No other BEFORE row trigger on tasks may change a row after the
	// names' rules looked at it, or without their seeing it.
	var others []string
	if err := pool.QueryRow(ctx, `SELECT coalesce(array_agg(tgname::text), '{}') FROM pg_trigger
		WHERE tgrelid = 'tasks'::regclass AND NOT tgisinternal AND tgtype & 2 = 2 AND tgtype & 1 = 1
			AND tgname <> 'tasks_names'`).Scan(&others); err != nil || len(others) > 0 {
		t.Errorf("BEFORE row triggers on tasks besides tasks_names: %v (%v)", others, err)
	}
	// Within the limits, names of 128 characters and a key of 255 pass.
	if _, err := pool.Exec(ctx, `UPDATE tasks SET tenant = `+long(128)+`, queue = `+long(128)+`, kind = `+long(128)+
		`, submission_key = `+long(255)+`, request_hash = '\x00' WHERE id = $1`, task); err != nil {
		t.Errorf("names at their longest are refused: %v", err)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM tasks WHERE state = 'queued' AND max_attempts > 0`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d valid tasks (%v); a refused write changed a row", n, err)
	}
}

// isViolation reports whether err is a check_violation of the rule named.
func isViolation(err error, rule string) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23514" && pgErr.ConstraintName == rule
}
